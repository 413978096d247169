#include "tests/support/generated_c_check.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace bpfql::testing {
namespace {

// Helpers and keywords a query must never be able to reach: memory writes outside our own maps,
// signals, changing a function's return, tail calls into other programs, inline assembly.
constexpr std::array<std::string_view, 14> kForbidden = {
    "bpf_probe_write_user", "bpf_send_signal",  "bpf_send_signal_thread", "bpf_override_return",
    "bpf_sys_bpf",          "bpf_sys_close",    "bpf_set_retval",         "bpf_tail_call",
    "bpf_skb_store_bytes",  "bpf_copy_from_user_task", "asm",             "__asm__",
    "__asm",                "bpf_kallsyms_lookup_name",
};

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

class Scanner {
 public:
  explicit Scanner(std::string_view c) : c_(c) {}

  std::string run() {
    while (problem_.empty() && i_ < c_.size()) step();
    if (!problem_.empty()) return problem_;
    if (!brackets_.empty()) return at(std::string("unclosed '") + brackets_.back() + "'");
    return "";
  }

 private:
  std::string at(const std::string& what) const { return "line " + std::to_string(line_) + ": " + what; }

  void step() {
    char ch = c_[i_];
    if (ch != '\n' && (ch < 0x20 || ch > 0x7e)) {
      problem_ = at("byte " + std::to_string(static_cast<unsigned char>(ch)) + " is not printable ASCII");
      return;
    }
    if (ch == '\n') {
      ++line_;
      ++i_;
      line_start_ = true;
      return;
    }
    if (ch == ' ') {
      ++i_;
      return;
    }
    bool first_on_line = line_start_;
    line_start_ = false;
    if (ch == '#') return preprocessor(first_on_line);
    if (c_.substr(i_).starts_with("/*")) return block_comment();
    if (c_.substr(i_).starts_with("//")) return line_comment();
    if (c_.substr(i_).starts_with("*/")) {  // the end of a comment that ended earlier
      problem_ = at("'*/' outside a comment");
      return;
    }
    if (ch == '"') return literal('"', "string literal");
    if (ch == '\'') return literal('\'', "character literal");
    if (ident_start(ch)) return identifier();
    bracket(ch);
    ++i_;
  }

  void preprocessor(bool first_on_line) {
    size_t end = c_.find('\n', i_);
    std::string_view text = c_.substr(i_, end == c_.npos ? c_.npos : end - i_);
    bool include = first_on_line && text.starts_with("#include <") && text.ends_with(">") &&
                   std::all_of(text.begin() + 10, text.end() - 1, [](char c) {
                     return ident_char(c) || c == '/' || c == '.';
                   });
    if (!include) problem_ = at("preprocessor line '" + std::string(text) + "'");
    i_ += text.size();
  }

  void block_comment() {
    size_t end = c_.find("*/", i_ + 2);
    if (end == c_.npos) {
      problem_ = at("unterminated comment");
      return;
    }
    std::string_view body = c_.substr(i_ + 2, end - i_ - 2);
    if (body.find("/*") != body.npos) problem_ = at("'/*' inside a comment");
    line_ += static_cast<int>(std::count(body.begin(), body.end(), '\n'));
    i_ = end + 2;
  }

  void line_comment() {
    size_t end = c_.find('\n', i_);
    std::string_view body = c_.substr(i_, end == c_.npos ? c_.npos : end - i_);
    if (body.ends_with("\\")) problem_ = at("line comment continued with a backslash");
    i_ += body.size();
  }

  // A "..." or '...' literal: no raw newline, escapes only of one character or \xHH.
  void literal(char quote, const char* what) {
    size_t j = i_ + 1;
    int chars = 0;
    while (j < c_.size() && c_[j] != quote) {
      if (c_[j] == '\n') {
        problem_ = at(std::string("newline in a ") + what);
        return;
      }
      if (c_[j] == '\\') {
        if (j + 1 >= c_.size()) break;
        char e = c_[j + 1];
        if (e == 'x') {
          size_t k = j + 2;
          while (k < c_.size() && k < j + 4 && std::isxdigit(static_cast<unsigned char>(c_[k]))) ++k;
          if (k != j + 4) {
            problem_ = at(std::string("bad \\x escape in a ") + what);
            return;
          }
          j = k;
        } else if (std::string_view("\\'\"nrt0").find(e) != std::string_view::npos) {
          j += 2;
        } else {
          problem_ = at(std::string("unexpected escape '\\") + e + "' in a " + what);
          return;
        }
      } else {
        ++j;
      }
      ++chars;
    }
    if (j >= c_.size()) {
      problem_ = at(std::string("unterminated ") + what);
      return;
    }
    if (quote == '\'' && chars != 1) {
      problem_ = at("a character literal holds " + std::to_string(chars) + " characters");
      return;
    }
    i_ = j + 1;
  }

  // A forbidden name is one that is called: `name (`, not a member (`.name`, `->name`) that
  // happens to be spelled like a helper.
  void identifier() {
    size_t j = i_;
    while (j < c_.size() && ident_char(c_[j])) ++j;
    std::string_view name = c_.substr(i_, j - i_);
    bool member = (i_ >= 1 && c_[i_ - 1] == '.') || (i_ >= 2 && c_.substr(i_ - 2, 2) == "->");
    size_t next = c_.find_first_not_of(' ', j);
    bool called = next != c_.npos && c_[next] == '(';
    if (called && !member &&
        std::find(kForbidden.begin(), kForbidden.end(), name) != kForbidden.end())
      problem_ = at("call of forbidden '" + std::string(name) + "'");
    i_ = j;
  }

  void bracket(char ch) {
    static constexpr std::string_view kOpen = "([{", kClose = ")]}";
    if (kOpen.find(ch) != kOpen.npos) {
      brackets_.push_back(ch);
    } else if (size_t k = kClose.find(ch); k != kClose.npos) {
      if (brackets_.empty() || brackets_.back() != kOpen[k]) {
        problem_ = at(std::string("unbalanced '") + ch + "'");
        return;
      }
      brackets_.pop_back();
    } else if (ch == '\\') {
      problem_ = at("stray backslash");
    }
  }

  std::string_view c_;
  size_t i_ = 0;
  int line_ = 1;
  bool line_start_ = true;
  std::vector<char> brackets_;
  std::string problem_;
};

}  // namespace

std::string generated_c_problem(std::string_view c) { return Scanner(c).run(); }

}  // namespace bpfql::testing
