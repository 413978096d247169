#include "compiler/syntax/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

namespace bpfql {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Nanoseconds per duration unit, or nullopt for a word that is not a unit.
std::optional<uint64_t> duration_unit(std::string_view unit) {
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 6> kUnits = {{
      {"ns", 1},
      {"us", 1'000},
      {"ms", 1'000'000},
      {"s", 1'000'000'000},
      {"m", 60'000'000'000},
      {"h", 3'600'000'000'000},
  }};
  for (const auto& [name, ns] : kUnits)
    if (name == unit) return ns;
  return std::nullopt;
}

// digits in `base` → value; nullopt on overflow. The caller has checked every digit.
std::optional<uint64_t> digits_value(std::string_view digits, unsigned base) {
  uint64_t value = 0;
  for (char c : digits) {
    if (__builtin_mul_overflow(value, base, &value)) return std::nullopt;
    if (__builtin_add_overflow(value, static_cast<uint64_t>(hex_value(c)), &value))
      return std::nullopt;
  }
  return value;
}

// The longest operator or punctuation symbol at the start of `rest`, or "".
std::string_view match_punct(std::string_view rest) {
  static constexpr std::array<std::string_view, 10> kTwo = {
      "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "<>", "->"};
  for (std::string_view op : kTwo)
    if (rest.starts_with(op)) return op;
  static constexpr std::string_view kOne = "!~-*/%+<>&^|(),=.[]?:";
  if (!rest.empty() && kOne.find(rest[0]) != std::string_view::npos) return rest.substr(0, 1);
  return {};
}

}  // namespace

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string source_snippet(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte >= 0x7f)
      out += fmt::format("\\x{:02x}", byte);
    else
      out += text[i];
  }
  if (text.size() > kMax) out += "...";
  return out;
}

SourceMap::SourceMap(std::string_view text, SourceLoc start) : start_(std::move(start)) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLoc SourceMap::loc(size_t offset) const {
  auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  if (after == line_starts_.begin()) return start_.shifted(static_cast<int>(offset));
  auto line = static_cast<int>(after - line_starts_.begin());
  return {start_.file, start_.line + line, 1 + static_cast<int>(offset - *(after - 1))};
}

Lexer::Lexer(std::string_view text, const SourceLoc& start) : text_(text), map_(text, start) {
  trimmed_end_ = text.size();
  while (trimmed_end_ > 0 && is_blank(text[trimmed_end_ - 1])) --trimmed_end_;
}

Token Lexer::invalid(size_t at, std::string message) {
  Token token;
  token.kind = TokenKind::Invalid;
  token.begin = at;
  token.end = at;
  token.error = Diagnostic{map_.loc(at), std::move(message)};
  pos_ = text_.size();  // nothing after a lexical error is trustworthy
  return token;
}

Token Lexer::next() {
  while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
  if (pos_ >= text_.size()) {
    Token end;
    end.begin = end.end = trimmed_end_;
    return end;
  }
  char c = text_[pos_];
  if (is_digit(c)) return lex_number();
  if (c == '"' || c == '\'') return lex_string();
  if (is_name_start(c)) return lex_name();
  if (c == '$') return lex_param();
  return lex_punct();
}

Token Lexer::lex_number() {
  size_t begin = pos_;
  Token token;
  token.kind = TokenKind::Integer;
  token.begin = begin;
  bool hex = text_[pos_] == '0' && pos_ + 1 < text_.size() &&
             (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X');
  if (hex) pos_ += 2;
  size_t digits_begin = pos_;
  while (pos_ < text_.size() && (hex ? hex_value(text_[pos_]) >= 0 : is_digit(text_[pos_]))) ++pos_;
  std::string_view digits = text_.substr(digits_begin, pos_ - digits_begin);
  size_t suffix_begin = pos_;
  while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
  std::string_view suffix = text_.substr(suffix_begin, pos_ - suffix_begin);
  std::string_view spelling = text_.substr(begin, pos_ - begin);
  token.end = pos_;

  if (hex && digits.empty())
    return invalid(begin, fmt::format("expected hex digits after '{}'", text_.substr(begin, 2)));
  if (!suffix.empty()) {
    std::optional<uint64_t> unit = hex ? std::nullopt : duration_unit(suffix);
    if (!unit)
      return invalid(begin, fmt::format("invalid suffix '{}' on number '{}'; a duration takes "
                                        "ns, us, ms, s, m or h",
                                        source_snippet(suffix), source_snippet(spelling)));
    // Durations are decimal even with a leading zero: `05s` is five seconds.
    std::optional<uint64_t> count = digits_value(digits, 10);
    uint64_t ns = 0;
    if (!count || __builtin_mul_overflow(*count, *unit, &ns))
      return invalid(begin, fmt::format("duration '{}' does not fit in 64 bits of nanoseconds",
                                        source_snippet(spelling)));
    token.number = ns;
    return token;
  }
  if (pos_ + 1 < text_.size() && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
    if (hex || (digits.size() > 1 && digits[0] == '0'))
      return invalid(begin, "a fractional number is written in decimal: 99.9");
    ++pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && (is_name_char(text_[pos_]) || text_[pos_] == '.'))
      return invalid(begin, fmt::format("invalid number '{}'",
                                        source_snippet(text_.substr(begin, pos_ + 1 - begin))));
    token.kind = TokenKind::Decimal;
    token.end = pos_;
    token.value = std::string(text_.substr(begin, pos_ - begin));
    return token;
  }

  unsigned base = hex ? 16 : 10;
  if (!hex && digits.size() > 1 && digits[0] == '0') {
    base = 8;  // C octal, so that `args.mode == 0644` means what a C programmer expects
    for (size_t i = 0; i < digits.size(); ++i)
      if (digits[i] > '7')
        return invalid(digits_begin + i, fmt::format("invalid digit '{}' in octal literal '{}'",
                                                     digits[i], source_snippet(spelling)));
  }
  std::optional<uint64_t> value = digits_value(digits, base);
  if (!value)
    return invalid(begin, fmt::format("integer literal '{}' does not fit in 64 bits",
                                      source_snippet(spelling)));
  token.number = *value;
  return token;
}

Token Lexer::lex_string() {
  size_t begin = pos_;
  char quote = text_[pos_++];
  Token token;
  token.kind = TokenKind::String;
  token.begin = begin;
  while (pos_ < text_.size() && text_[pos_] != quote) {
    char c = text_[pos_];
    if (c != '\\') {
      token.value += c;
      ++pos_;
      continue;
    }
    size_t escape = pos_;
    if (pos_ + 1 >= text_.size()) return invalid(begin, "unterminated string");
    char kind = text_[pos_ + 1];
    pos_ += 2;
    switch (kind) {
      case '\n':  // a line continuation, as in C: the break and the next line's indentation vanish
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
        break;
      case 'n':
        token.value += '\n';
        break;
      case 't':
        token.value += '\t';
        break;
      case 'r':
        token.value += '\r';
        break;
      case '0':
        token.value += '\0';
        break;
      case '\\':
      case '"':
      case '\'':
        token.value += kind;
        break;
      case 'x': {
        int high = pos_ < text_.size() ? hex_value(text_[pos_]) : -1;
        int low = pos_ + 1 < text_.size() ? hex_value(text_[pos_ + 1]) : -1;
        if (high < 0 || low < 0) return invalid(escape, "expected two hex digits after '\\x'");
        token.value += static_cast<char>(high * 16 + low);
        pos_ += 2;
        break;
      }
      default:
        return invalid(escape, fmt::format("unknown escape sequence '\\{}' in string",
                                           source_snippet(std::string_view(&kind, 1))));
    }
  }
  if (pos_ >= text_.size()) return invalid(begin, "unterminated string");
  token.end = ++pos_;
  return token;
}

// Whether the name at `at` is a struct member (`x->entry.next`, `s.entry.y`): it follows `->`,
// or a `.` that does not end `begin.` or `entry.` (`begin.entry.arg0` captures an entry value).
bool Lexer::names_member(size_t at) const {
  if (at == 0) return false;
  if (text_[at - 1] == '>') return true;
  if (text_[at - 1] != '.') return false;
  size_t word = at - 1;
  while (word > 0 && is_name_char(text_[word - 1])) --word;
  std::string_view before = text_.substr(word, at - 1 - word);
  bool starts_word = word == 0 || !(text_[word - 1] == '.' || text_[word - 1] == '>');
  return !(starts_word && (before == "begin" || before == "entry"));
}

Token Lexer::lex_name() {
  Token token;
  token.begin = pos_;
  while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
  std::string_view name = text_.substr(token.begin, pos_ - token.begin);
  if (name == "args" && pos_ < text_.size() && text_[pos_] == '.') {
    size_t field_begin = ++pos_;
    if (pos_ >= text_.size() || !is_name_start(text_[pos_]))
      return invalid(field_begin, "expected a field name after 'args.'");
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    token.kind = TokenKind::Field;
    token.value = text_.substr(field_begin, pos_ - field_begin);
  } else if (name == "begin" && pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= text_.size() || !(is_name_start(text_[pos_]) || text_[pos_] == '('))
      return invalid(pos_, "expected an expression after 'begin.' (such as begin.comm)");
    token.kind = TokenKind::Capture;
    token.value = "begin";
  } else if (name == "entry" && pos_ < text_.size() && text_[pos_] == '.' &&
             !names_member(token.begin)) {
    ++pos_;
    if (pos_ >= text_.size() || !(is_name_start(text_[pos_]) || text_[pos_] == '('))
      return invalid(pos_, "expected an expression after 'entry.' (such as entry.arg0)");
    token.kind = TokenKind::Entry;
    token.value = "entry";
  } else {
    token.kind = TokenKind::Name;
    token.value = name;
  }
  token.end = pos_;
  return token;
}

Token Lexer::lex_param() {
  Token token;
  token.kind = TokenKind::Param;
  token.begin = pos_++;
  if (pos_ >= text_.size() || !is_name_start(text_[pos_]))
    return invalid(token.begin, "expected a parameter name after '$'");
  size_t name_begin = pos_;
  while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
  token.value = text_.substr(name_begin, pos_ - name_begin);
  token.end = pos_;
  return token;
}

Token Lexer::lex_punct() {
  std::string_view op = match_punct(text_.substr(pos_));
  if (op.empty()) {
    return invalid(pos_, fmt::format("unexpected character '{}'",
                                     source_snippet(text_.substr(pos_, 1))));
  }
  Token token;
  token.kind = TokenKind::Punct;
  token.begin = pos_;
  pos_ += op.size();
  token.end = pos_;
  // SQL's spellings of equality and inequality (there is no assignment to confuse `=` with).
  token.value = op == "=" ? "==" : op == "<>" ? "!=" : op;
  return token;
}

Result<std::vector<Token>> tokenize(std::string_view text, const SourceLoc& start) {
  Lexer lexer(text, start);
  std::vector<Token> tokens;
  for (;;) {
    Token token = lexer.next();
    if (token.kind == TokenKind::Invalid) return std::unexpected(token.error);
    bool end = token.kind == TokenKind::End;
    tokens.push_back(std::move(token));
    if (end) return tokens;
  }
}

}  // namespace bpfql
