// The `print fmt:` line of a tracepoint's format file: the printk format the kernel itself uses
// for the event, and its arguments. bpfql reads it for what the field list cannot say, such as
// "this u8[4] is an IPv4 address" (`saddr=%pI4`, REC->saddr).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bpfql {

// One conversion of the format and the argument it prints.
struct PrintedArgument {
  std::string conversion;  // without the '%' and its flags or width: "pI4", "pI6c", "hu", "s"
  std::string argument;    // trimmed, as written: "REC->saddr", "__print_symbolic(REC->x, ...)"
};

// The conversions of `text` (what follows "print fmt:") paired with their arguments in order. A
// `*` width or precision takes an argument of its own, which is skipped. Text that does not
// parse as a quoted format and a comma-separated list gives fewer pairs, never an error: the
// print fmt only adds to what the fields say.
std::vector<PrintedArgument> parse_print_fmt(std::string_view text);

// "saddr" for "REC->saddr" (also inside parentheses, or after '&'); "" for anything else.
std::string printed_field(std::string_view argument);

}  // namespace bpfql
