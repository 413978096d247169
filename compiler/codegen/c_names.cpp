#include "compiler/codegen/c_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace bpfql::c_names {
namespace {

// C keywords, plus the type names and object-like macros of the BCC prologue that a struct member
// of the same name would collide with.
constexpr std::array<std::string_view, 56> kReserved = {
    "auto",     "break",    "case",     "char",
    "const",    "continue", "default",  "do",
    "double",   "else",     "enum",     "extern",
    "float",    "for",      "goto",     "if",
    "inline",   "int",      "long",     "register",
    "restrict", "return",   "short",    "signed",
    "sizeof",   "static",   "struct",   "switch",
    "typedef",  "union",    "unsigned", "void",
    "volatile", "while",    "asm",      "typeof",
    "bool",     "true",     "false",    "NULL",
    "u8",       "u16",      "u32",      "u64",
    "s8",       "s16",      "s32",      "s64",
    "current",  "size_t",   "_Bool",    "_Static_assert",
    "__u64",    "__u32",    "__s64",    "__s32",
};

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_alnum(char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool is_safe_identifier_part(std::string_view part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), is_alnum);
}

bool is_c_member_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || !is_alpha(name[0]) || !is_safe_identifier_part(name))
    return false;
  return std::find(kReserved.begin(), kReserved.end(), name) == kReserved.end();
}

bool is_safe_identifier(std::string_view name) {
  if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z')))
    return false;
  return is_c_member_name(name);
}

std::string char_literal(unsigned char byte) {
  if (byte == '\'') return "'\\''";
  if (byte == '\\') return "'\\\\'";
  if (byte >= 0x20 && byte < 0x7f) return std::string("'") + static_cast<char>(byte) + "'";
  return fmt::format("'\\x{:02x}'", byte);
}

std::string comment_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 100) {
      out += "...";
      break;
    }
    bool printable = c >= 0x20 && c < 0x7f;
    char ch = printable ? c : '?';
    // "*/" would end the comment; "/*" makes clang warn. Neither survives.
    if ((ch == '/' && !out.empty() && out.back() == '*') ||
        (ch == '*' && !out.empty() && out.back() == '/'))
      out += ' ';
    out += ch;
  }
  if (!out.empty() && out.back() == '\\') out += ' ';
  return out;
}

std::string u64_literal(uint64_t value) {
  if (value <= 0x7fffffffu) return fmt::format("{}", value);
  return fmt::format("{}ULL", value);
}

std::string s64_literal(int64_t value) {
  if (value == INT64_MIN) return "(-9223372036854775807LL - 1)";
  if (value >= -0x7fffffffLL - 1 && value <= 0x7fffffffLL) return fmt::format("{}", value);
  return fmt::format("{}LL", value);
}

std::string field_name(std::string_view column, std::string_view fallback,
                       std::set<std::string>& taken) {
  std::string name;
  for (char c : column) {
    if (name.size() >= 32) break;
    if (is_alnum(c)) {
      name += c;
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
    }
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  while (!name.empty() && name.front() == '_') name.erase(name.begin());
  if (!is_safe_identifier(name)) name = std::string(fallback);
  std::string base = name;
  for (int n = 2; taken.count(name); ++n) name = fmt::format("{}_{}", base, n);
  taken.insert(name);
  return name;
}

}  // namespace bpfql::c_names
