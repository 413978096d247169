// Reading libbcc's load failures: the verifier log it prints, boiled down to the lines that say
// why (the rejected instruction's message and the C line it came from).
#pragma once

#include <string>
#include <string_view>

namespace bpfql {

// From captured stderr holding "bpf: Failed to load program: <reason>" followed by the verifier
// log: "<error line> (at: <C source line>)"; the reason alone when there is no log; "" when the
// text has no load failure in it.
std::string verifier_summary(std::string_view captured);

// Whether captured stderr says the kernel answered E2BIG: the verifier gave up after a million
// instructions (libbcc then prints "Argument list too long. Program ... too large" and no log).
bool is_too_complex(std::string_view captured);

// The first `max_lines` non-empty lines of `text`, joined by "; ".
std::string first_lines(std::string_view text, int max_lines);

}  // namespace bpfql
