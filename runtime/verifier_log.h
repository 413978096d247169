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

// The first `max_lines` non-empty lines of `text`, joined by "; ".
std::string first_lines(std::string_view text, int max_lines);

}  // namespace bpfql
