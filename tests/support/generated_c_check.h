// A lexical check of generated BPF C, for the fuzzer and the injection tests: whatever a query
// file holds, the C that bpfql prints must be plain ASCII whose comments, string and character
// literals all end where they should, whose brackets balance, whose only preprocessor lines are
// `#include <...>`, and which calls only the helpers on an allowlist: none that writes memory,
// signals or redirects control (docs/security.md). It does not replace compiling the C; it
// catches injection without clang, millions of times a minute under the fuzzer.
#pragma once

#include <string>
#include <string_view>

namespace bpfql::testing {

// "" when `c` passes, else what is wrong and where ("line 12: unterminated comment").
std::string generated_c_problem(std::string_view c);

}  // namespace bpfql::testing
