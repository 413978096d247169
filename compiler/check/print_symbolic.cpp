// Reads __print_symbolic / __print_flags tables out of a print fmt (see print_symbolic.h).
#include "compiler/check/print_symbolic.h"

#include <cctype>
#include <cstdlib>
#include <optional>

namespace bpfql {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The text between the '(' at `open` and its matching ')', skipping strings.
std::string_view enclosed(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return text.substr(open + 1, i - open - 1);
    }
  }
  return {};
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "12", "0x0400", "(1UL << 3)", "1 << 3": the value, or nullopt.
std::optional<uint64_t> parse_value(std::string_view text) {
  text = trim_view(text);
  while (text.size() >= 2 && text.front() == '(' && text.back() == ')')
    text = trim_view(text.substr(1, text.size() - 2));
  auto number = [](std::string_view t) -> std::optional<uint64_t> {
    t = trim_view(t);
    while (!t.empty() && (t.back() == 'U' || t.back() == 'L' || t.back() == 'u' || t.back() == 'l'))
      t.remove_suffix(1);
    if (t.empty()) return std::nullopt;
    std::string s(t);
    char* end = nullptr;
    uint64_t v = std::strtoull(s.c_str(), &end, 0);
    if (end == nullptr || *end != '\0') return std::nullopt;
    return v;
  };
  if (size_t shift = text.find("<<"); shift != std::string_view::npos) {
    auto base = number(text.substr(0, shift));
    auto by = number(text.substr(shift + 2));
    if (!base || !by || *by > 63) return std::nullopt;
    return *base << *by;
  }
  return number(text);
}

// The first REC->NAME in the text.
std::string record_field(std::string_view text) {
  size_t at = text.find("REC->");
  if (at == std::string_view::npos) return "";
  size_t begin = at + 5, end = begin;
  while (end < text.size() && ident_char(text[end])) ++end;
  return std::string(text.substr(begin, end - begin));
}

// `{ VALUE, "NAME" }` entries from `text`.
void read_entries(std::string_view text, SymbolTable& table) {
  size_t i = 0;
  while ((i = text.find('{', i)) != std::string_view::npos) {
    size_t close = text.find('}', i);
    if (close == std::string_view::npos) return;
    std::string_view entry = text.substr(i + 1, close - i - 1);
    i = close + 1;
    size_t q1 = entry.find('"');
    size_t q2 = q1 == std::string_view::npos ? q1 : entry.find('"', q1 + 1);
    size_t comma = entry.rfind(',', q1);
    if (q2 == std::string_view::npos || comma == std::string_view::npos) continue;
    auto value = parse_value(entry.substr(0, comma));
    if (!value) continue;
    table.entries.emplace_back(*value, std::string(entry.substr(q1 + 1, q2 - q1 - 1)));
  }
}

}  // namespace

std::vector<SymbolTable> print_symbol_tables(std::string_view print_fmt) {
  std::vector<SymbolTable> out;
  for (std::string_view fn : {std::string_view("__print_symbolic("), std::string_view("__print_flags(")}) {
    size_t at = 0;
    while ((at = print_fmt.find(fn, at)) != std::string_view::npos) {
      size_t open = at + fn.size() - 1;
      at = open + 1;
      std::string_view body = enclosed(print_fmt, open);
      size_t first_brace = body.find('{');
      if (body.empty() || first_brace == std::string_view::npos) continue;
      SymbolTable table;
      table.flags = fn == "__print_flags(";
      std::string_view head = body.substr(0, first_brace);
      table.field = record_field(head);
      if (table.flags) {
        size_t q1 = head.find('"');
        size_t q2 = q1 == std::string_view::npos ? q1 : head.find('"', q1 + 1);
        table.delimiter = q2 == std::string_view::npos ? "|" : std::string(head.substr(q1 + 1, q2 - q1 - 1));
      }
      read_entries(body.substr(first_brace), table);
      if (table.field.empty() || table.entries.empty()) continue;
      bool seen = false;  // the same field printed twice (sched_switch's ternary): once
      for (const auto& t : out) seen = seen || (t.field == table.field && t.flags == table.flags);
      if (!seen) out.push_back(std::move(table));
    }
  }
  return out;
}

}  // namespace bpfql
