// Pairs the conversions of a tracepoint's print fmt with their arguments (see print_fmt.h).
#include "compiler/check/print_fmt.h"
#include "compiler/text.h"

#include <cctype>
#include <cstring>

namespace bpfql {
namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The quoted format at the start of `text` (escapes kept as written) and where it ends; npos
// when there is no closing quote.
size_t quoted_end(std::string_view text) {
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i;
  }
  return std::string_view::npos;
}

// The arguments after the format: split at the commas outside brackets, strings and chars
// (`__print_symbolic(REC->family, { 2, "AF_INET" })` is one argument).
std::vector<std::string_view> split_arguments(std::string_view rest) {
  std::vector<std::string_view> args;
  rest = trim(rest);
  if (rest.empty() || rest.front() != ',') return args;
  rest.remove_prefix(1);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    if (c == '"' || c == '\'') {
      for (++i; i < rest.size() && rest[i] != c; ++i)
        if (rest[i] == '\\') ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      args.push_back(trim(rest.substr(start, i - start)));
      start = i + 1;
    }
  }
  args.push_back(trim(rest.substr(start)));
  return args;
}

struct Conversion {
  std::string text;  // "pI4", "lu"
  int stars = 0;     // arguments taken by a `*` width or precision before its own
};

// printk conversions: %[flags][width][.precision][length]type, and after %p the kernel's
// extension letters (%pI4, %pI6c, %pISpc, %pS).
std::vector<Conversion> conversions(std::string_view format) {
  std::vector<Conversion> out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '\\') {
      ++i;
      continue;
    }
    if (format[i] != '%') continue;
    size_t j = i + 1;
    if (j < format.size() && format[j] == '%') {
      i = j;
      continue;
    }
    Conversion c;
    while (j < format.size() && std::strchr("-+ #0'", format[j])) ++j;
    auto number_or_star = [&] {
      if (j < format.size() && format[j] == '*') {
        ++c.stars;
        ++j;
      }
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    };
    number_or_star();
    if (j < format.size() && format[j] == '.') {
      ++j;
      number_or_star();
    }
    size_t type_start = j;
    while (j < format.size() && std::strchr("hlLqjzZt", format[j])) ++j;
    if (j >= format.size() || !std::isalpha(static_cast<unsigned char>(format[j]))) {
      i = j - 1;  // not a conversion printk knows: no argument
      continue;
    }
    bool pointer = format[j] == 'p';
    ++j;
    if (pointer)
      while (j < format.size() && std::isalnum(static_cast<unsigned char>(format[j]))) ++j;
    c.text = std::string(format.substr(type_start, j - type_start));
    out.push_back(std::move(c));
    i = j - 1;
  }
  return out;
}

}  // namespace

std::vector<PrintedArgument> parse_print_fmt(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.front() != '"') return {};
  size_t end = quoted_end(text);
  if (end == std::string_view::npos) return {};
  std::vector<std::string_view> args = split_arguments(text.substr(end + 1));
  std::vector<PrintedArgument> out;
  size_t next = 0;
  for (const Conversion& c : conversions(text.substr(1, end - 1))) {
    next += static_cast<size_t>(c.stars);
    if (next >= args.size()) break;
    out.push_back(PrintedArgument{c.text, std::string(args[next++])});
  }
  return out;
}

std::string printed_field(std::string_view argument) {
  std::string_view a = trim(argument);
  for (;;) {
    if (a.size() >= 2 && a.front() == '(' && a.back() == ')') {
      // Only when the parentheses enclose the whole argument: not "(a) + (b)".
      int depth = 0;
      bool whole = true;
      for (size_t i = 0; i + 1 < a.size() && whole; ++i) {
        depth += a[i] == '(' ? 1 : a[i] == ')' ? -1 : 0;
        whole = depth > 0;
      }
      if (!whole) break;
      a = trim(a.substr(1, a.size() - 2));
    } else if (!a.empty() && a.front() == '&') {
      a = trim(a.substr(1));
    } else {
      break;
    }
  }
  constexpr std::string_view kRecord = "REC->";
  if (!a.starts_with(kRecord)) return "";
  std::string_view name = a.substr(kRecord.size());
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return "";
  for (char c : name)
    if (!is_ident_char(c)) return "";
  return std::string(name);
}

}  // namespace bpfql
