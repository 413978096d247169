// The name tables of a tracepoint's print fmt: `__print_symbolic(REC->F, { 1, "TCP_ESTABLISHED" },
// ...)` (one value, one name) and `__print_flags(REC->F, "|", { 0x01, "S" }, ...)` (bits, joined).
// They let symbolic(args.F) print names the way the kernel's own trace output does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bpfql {

struct SymbolTable {
  std::string field;  // "newstate" for REC->newstate
  bool flags = false;  // __print_flags
  std::string delimiter;  // __print_flags: "|"
  std::vector<std::pair<uint64_t, std::string>> entries;
};

// Every table of the print fmt text (what follows "print fmt:"), in order. A table whose field or
// values cannot be read (an expression bpfql does not evaluate) is left out.
std::vector<SymbolTable> print_symbol_tables(std::string_view print_fmt);

}  // namespace bpfql
