// YamlSource::expression_text: an expression scalar's text laid out as it stands in the file
// (line breaks and indentation that YAML folded or dropped put back outside string literals),
// so the expression parser's lines and columns are the file's. Moved out of load_source.cpp.
#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"

namespace bpfql::load {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A double-quoted scalar's escape at the start of `raw` (which begins with '\\'): how many raw
// bytes it takes and the bytes yaml-cpp makes of it (nothing for an escaped line break).
struct YamlEscape {
  size_t raw_length = 0;
  std::string bytes;
};

std::optional<YamlEscape> yaml_escape(std::string_view raw) {
  if (raw.size() < 2) return std::nullopt;
  char c = raw[1];
  if (c == '\n' || c == '\r') {  // an escaped line break, and the next line's indentation
    size_t n = raw.starts_with("\\\r\n") ? 3 : 2;
    while (n < raw.size() && (raw[n] == ' ' || raw[n] == '\t')) ++n;
    return YamlEscape{n, ""};
  }
  size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits == 0) {
    static constexpr std::string_view kFrom = "0abt\tnvfre \"'\\/N_";
    static constexpr std::string_view kTo =
        std::string_view("\0\a\b\t\t\n\v\f\r\x1b \"'\\/\x85\xa0", 17);
    if (size_t k = kFrom.find(c); k != kFrom.npos) return YamlEscape{2, std::string(1, kTo[k])};
    if (c == 'L') return YamlEscape{2, "\xe2\x80\xa8"};
    if (c == 'P') return YamlEscape{2, "\xe2\x80\xa9"};
    return std::nullopt;
  }
  if (raw.size() < 2 + digits) return std::nullopt;
  uint32_t value = 0;
  for (char h : raw.substr(2, digits)) {
    int v = h >= '0' && h <= '9'   ? h - '0'
            : h >= 'a' && h <= 'f' ? h - 'a' + 10
            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                   : -1;
    if (v < 0) return std::nullopt;
    value = value * 16 + static_cast<uint32_t>(v);
  }
  std::string bytes;  // UTF-8, as yaml-cpp encodes it
  auto byte = [&](uint32_t b) { bytes += static_cast<char>(b); };
  if (value <= 0x7f) {
    byte(value);
  } else if (value <= 0x7ff) {
    byte(0xc0 + (value >> 6)), byte(0x80 + (value & 0x3f));
  } else if (value <= 0xffff) {
    byte(0xe0 + (value >> 12)), byte(0x80 + ((value >> 6) & 0x3f)), byte(0x80 + (value & 0x3f));
  } else {
    byte(0xf0 + (value >> 18)), byte(0x80 + ((value >> 12) & 0x3f));
    byte(0x80 + ((value >> 6) & 0x3f)), byte(0x80 + (value & 0x3f));
  }
  return YamlEscape{2 + digits, bytes};
}

// Walks a scalar's decoded text and its raw text side by side (see expression_text). White space
// outside the expression's string literals is free to change; everything else is kept.
class Layout {
 public:
  // `strings`: the text is an expression whose quotes start string literals (not a probe list).
  Layout(std::string_view decoded, std::string_view raw, char style, bool strings,
         std::function<int(size_t)> raw_column)
      : d_(decoded),
        r_(raw),
        style_(style),
        strings_(strings),
        raw_column_(std::move(raw_column)) {}

  // nullopt when the two texts do not line up (then the caller keeps the decoded text).
  std::optional<std::string> run() {
    while (i_ < d_.size()) {
      bool ok = style_ == '"' && j_ < r_.size() && r_[j_] == '\\' ? escape()
                : style_ == '\'' && d_[i_] == '\'' && r_.substr(j_).starts_with("''")
                    ? doubled_quote()
                : is_space(d_[i_]) && j_ < r_.size() && is_space(r_[j_]) ? spaces()
                                                                         : same_byte();
      if (!ok) return std::nullopt;
    }
    return out_;
  }

 private:
  static bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  }
  static bool operator_char(char c) {
    return std::string_view("<>=!&|").find(c) != std::string_view::npos;
  }

  // Scans only what was written since the last call: a rescan of the whole output for every
  // run of spaces made one long line quadratic (1 MB took minutes).
  int layout_column() {
    scanned_ = std::min(scanned_, out_.size());
    for (; scanned_ < out_.size(); ++scanned_)
      if (out_[scanned_] == '\n') last_newline_ = scanned_;
    if (last_newline_ == std::string::npos || last_newline_ >= out_.size())
      return raw_column_(0) + static_cast<int>(out_.size());
    return static_cast<int>(out_.size() - last_newline_);
  }

  // The line breaks not written yet (they fell inside a string literal or a word), then spaces up
  // to the column of the raw byte at j_ (the one about to be written).
  void flush_breaks() {
    out_ += std::string(static_cast<size_t>(pending_), '\n');
    out_ += std::string(static_cast<size_t>(std::max(0, raw_column_(j_) - 1)), ' ');
    pending_ = 0;
  }

  // Outside string literals: flushes pending breaks where white space cannot split a token.
  void emit(char c) {
    if (!quote_ && pending_ && !out_.empty() && !(word_char(out_.back()) && word_char(c)) &&
        !(operator_char(out_.back()) && operator_char(c)))
      flush_breaks();
    out_ += c;
    if (escaped_) {
      escaped_ = false;
    } else if (quote_ && c == '\\') {
      escaped_ = true;
    } else if (quote_ && c == quote_) {
      quote_ = 0;
    } else if (!quote_ && strings_ && (c == '"' || c == '\'')) {
      quote_ = c;
    }
  }

  bool escape() {
    auto e = yaml_escape(r_.substr(j_));
    if (!e || d_.substr(i_, e->bytes.size()) != e->bytes) return false;
    if (e->bytes.empty() && (quote_ && !escaped_)) {  // an escaped line break in a string
      out_ += "\\\n";
      out_ +=
          std::string(static_cast<size_t>(std::max(0, raw_column_(j_ + e->raw_length) - 1)), ' ');
    } else if (e->bytes.empty()) {  // an escaped line break elsewhere (maybe inside a word)
      pending_ += 1;
    }
    i_ += e->bytes.size();
    for (char c : e->bytes) {
      if (!quote_ && is_blank(c)) c = ' ';  // white space, but not a new line of the layout
      out_ += c;  // no flush: the escape's columns are not the decoded text's
      if (c == '\\' || c == '"' || c == '\'') {
        out_.pop_back();
        emit(c);
      }
    }
    j_ += e->raw_length;
    return true;
  }

  bool doubled_quote() {
    emit('\'');
    i_ += 1;
    j_ += 2;
    return true;
  }

  bool spaces() {
    size_t j_end = j_;
    while (j_end < r_.size() && is_space(r_[j_end])) ++j_end;
    std::string_view raw_run = r_.substr(j_, j_end - j_);
    auto breaks = static_cast<int>(std::count(raw_run.begin(), raw_run.end(), '\n'));
    size_t i_end = i_;
    if (breaks == 0) {
      if (d_.substr(i_, raw_run.size()) != raw_run) return false;
      i_end = i_ + raw_run.size();
    } else if (style_ == '"' && j_end < r_.size() && r_[j_end] == '\\') {
      // An escape follows: take only what the fold made (' ' or line breaks), not what it makes.
      i_end = i_ + 1;
      while (d_[i_] == '\n' && i_end < d_.size() && d_[i_end] == '\n') ++i_end;
    } else {
      while (i_end < d_.size() && is_space(d_[i_end])) ++i_end;
    }
    std::string_view decoded_run = d_.substr(i_, i_end - i_);
    i_ = i_end;
    j_ = j_end;
    if (quote_ || escaped_) {
      // Inside a string literal the bytes stay what YAML made of them, written so that the text
      // still follows the file's lines: a line break byte as the escape "\n", and each line break
      // of the file as a line continuation, which the lexer skips with the indentation after it.
      if (breaks == 0) {
        for (char c : decoded_run) emit(c);
        return true;
      }
      if (escaped_) {
        // A backslash before the break: a line continuation (a `|` scalar keeps it), which
        // skips the indentation, so the file's own white space can stand.
        bool one_break =
            decoded_run[0] == '\n' && std::count(decoded_run.begin(), decoded_run.end(), '\n') == 1;
        if (!one_break || breaks != 1) return false;
        for (char c : raw_run) out_ += c == '\r' ? ' ' : c;
        escaped_ = false;
        return true;
      }
      for (char c : decoded_run) out_ += c == '\n' ? std::string("\\n") : std::string(1, c);
      for (int k = 0; k < breaks; ++k) out_ += "\\\n";
      out_ += std::string(static_cast<size_t>(std::max(0, raw_column_(j_) - 1)), ' ');
      return true;
    }
    pending_ += breaks;
    if (pending_) {
      flush_breaks();
      return true;
    }
    // Same line: the raw run, or as many spaces as bring the next byte to its raw column.
    int want = raw_column_(j_) - layout_column();
    if (want == static_cast<int>(raw_run.size()))
      out_ += raw_run;
    else
      out_ += std::string(static_cast<size_t>(std::max(1, want)), ' ');
    return true;
  }

  bool same_byte() {
    if (j_ >= r_.size() || r_[j_] != d_[i_]) return false;
    emit(d_[i_++]);  // with j_ at the byte: a flush puts it at its raw column
    ++j_;
    return true;
  }

  std::string_view d_, r_;
  char style_;
  bool strings_;
  std::function<int(size_t)> raw_column_;
  size_t i_ = 0, j_ = 0;
  std::string out_;
  char quote_ = 0;        // inside an expression's string literal
  bool escaped_ = false;  // after a backslash inside one
  int pending_ = 0;       // line breaks not yet written
  size_t scanned_ = 0;    // layout_column: out_ is scanned up to here
  size_t last_newline_ = std::string::npos;  // the last '\n' in out_[0, scanned_)
};

}  // namespace

Located YamlSource::expression_text(const YAML::Node& scalar, bool strings) const {
  Located located{scalar.Scalar(), text_of(scalar)};
  if (scalar.Mark().pos < 0) return located;
  size_t start = text_offset(scalar);
  size_t mark = skip_properties(static_cast<size_t>(scalar.Mark().pos));
  char style = mark < text_.size() && (text_[mark] == '"' || text_[mark] == '\'') ? text_[mark] : 0;
  Layout layout(located.text, text_.substr(std::min(start, text_.size())), style, strings,
                [&](size_t j) { return at_offset(start + j).col; });
  if (auto text = layout.run()) located.text = std::move(*text);
  return located;
}

}  // namespace bpfql::load
