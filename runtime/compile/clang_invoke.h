// The one translation unit that includes clang's and LLVM's headers (clang_compile.h is the
// interface). LLVM 14's headers do not compile as C++23 under clang (a unique_ptr of an
// incomplete type in a constexpr destructor), so this file is built as C++20 and takes and
// returns only standard types.
#pragma once

#include <string>
#include <string_view>

namespace bpfql::clang_invoke {

// Compiles C `source` for the BPF target at -O2; true with the ELF object in `object`, else false
// with clang's messages in `diagnostics`.
bool compile_to_object(std::string_view source, std::string& object, std::string& diagnostics);

}  // namespace bpfql::clang_invoke
