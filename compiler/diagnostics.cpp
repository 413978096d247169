#include "compiler/diagnostics.h"
#include "compiler/terminal_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace bpfql {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The length of the UTF-8 sequence at text[i] and its code point; length 0 if it is not UTF-8.
std::pair<size_t, uint32_t> utf8_at(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  unsigned c = byte(i);
  if (c < 0x80) return {1, c};
  size_t length = c >= 0xc2 && c <= 0xdf   ? 2
                  : c >= 0xe0 && c <= 0xef ? 3
                  : c >= 0xf0 && c <= 0xf4 ? 4
                                           : 0;
  uint32_t cp = c & (0x7f >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return {0, 0};
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  return {length, cp};
}

bool hidden(uint32_t cp) {
  return (cp < 0x20 && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c ||
         cp == 0x200e || cp == 0x200f || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// Where each character of `text` starts (in bytes), then text.size(); an invalid byte counts as
// a character of its own.
std::vector<size_t> char_starts(std::string_view text) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); i += std::max<size_t>(utf8_at(text, i).first, 1))
    starts.push_back(i);
  starts.push_back(text.size());
  return starts;
}

// More characters than anyone reads in one line of an error: a longer source line or name is
// cut (a 100 KB identifier would otherwise be echoed twice, in the message and the line).
constexpr size_t kMaxShownChars = 200;
constexpr std::string_view kCut = "\xe2\x80\xa6";  // "…" in UTF-8

// `text`'s characters [first, last), with "…" where something was cut off either side.
std::string excerpt(std::string_view text, const std::vector<size_t>& starts, size_t first,
                    size_t last) {
  std::string out = first > 0 ? std::string(kCut) : "";
  out += text.substr(starts[first], starts[last] - starts[first]);
  if (last + 1 < starts.size()) out += kCut;
  return out;
}

// A message with every overlong word (a name it quotes) cut to its start and end.
std::string shorten_long_words(std::string_view message) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    size_t end = std::min(message.find(' ', i), message.size());
    std::string_view word = message.substr(i, end - i);
    std::vector<size_t> starts = char_starts(word);
    size_t chars = starts.size() - 1;
    if (chars <= kMaxShownChars) {
      out += word;
    } else {
      // The end too: it holds the closing quote and any punctuation after the name.
      out += excerpt(word, starts, 0, kMaxShownChars - 20);
      out += word.substr(starts[chars - 20]);
    }
    if (end < message.size()) out += ' ';
    i = end + 1;
  }
  return out;
}

// The source line and a caret line under byte column `col`. Columns count bytes, a terminal
// shows characters: the caret's padding has one space per character (a tab for a tab). A long
// line shows only kMaxShownChars characters around the column.
std::string line_with_caret(std::string_view line, int col) {
  std::vector<size_t> starts = char_starts(line);
  size_t chars = starts.size() - 1;
  size_t byte_col = std::min<size_t>(std::max(col, 1) - 1, line.size());
  size_t at = std::lower_bound(starts.begin(), starts.end() - 1, byte_col) - starts.begin();
  size_t first = 0, last = chars;
  if (chars > kMaxShownChars) {
    last = std::min(chars, std::max(at, kMaxShownChars / 2) + kMaxShownChars / 2);
    first = last - kMaxShownChars;
  }
  std::string caret = first > 0 ? " " : "";  // under the leading "…"
  for (size_t i = first; i < at; ++i) caret += line[starts[i]] == '\t' ? '\t' : ' ';
  return fmt::format("  {}\n  {}^\n", excerpt(line, starts, first, last), caret);
}

std::string_view line_of(std::string_view text, int line) {
  size_t start = 0;
  for (int n = 1; n < line; ++n) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string_view found =
      text.substr(start, end == std::string_view::npos ? text.npos : end - start);
  if (!found.empty() && found.back() == '\r') found.remove_suffix(1);
  return found;
}

}  // namespace

// A terminal must not take a query file's bytes for commands: control characters (ESC starts
// escape sequences), C1 controls, bidirectional controls and invalid UTF-8 are shown as '?' in a
// source line (one per byte, so that the caret stays in its column) and as \xHH in a message.
std::string terminal_safe(std::string_view text, bool keep_columns) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto [length, cp] = utf8_at(text, i);
    size_t n = length == 0 ? 1 : length;
    if (length != 0 && !hidden(cp)) {
      out += text.substr(i, n);
    } else {
      for (size_t k = i; k < i + n; ++k)
        out += keep_columns ? std::string("?")
                            : fmt::format("\\x{:02x}", static_cast<unsigned char>(text[k]));
    }
    i += n;
  }
  return out;
}

std::string nearest_name(std::string_view wanted, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, wanted.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    // The lengths alone bound the distance: cheap for a binary's thousands of symbols.
    auto [shorter, longer] = std::minmax({wanted.size(), candidate.size()});  // by value
    if (longer - shorter >= best_distance) continue;
    size_t d = edit_distance(wanted, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view wanted, const std::vector<std::string>& candidates) {
  std::string best = nearest_name(wanted, candidates);
  return best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best);
}

namespace {

std::string format_one(const SourceLoc& loc, std::string_view text, std::string_view source_text,
                       std::string_view severity) {
  std::string message = shorten_long_words(terminal_safe(text, false));
  std::string out;
  if (loc.line > 0) {
    // The file name too: `bpfql check $'x\e]0;title\a.yml'` must not retitle the terminal.
    out = fmt::format("{}:{}:{}: {}: {}\n", terminal_safe(loc.file, false), loc.line,
                      std::max(loc.col, 1), severity,
                      message);
    // terminal_safe keeps byte columns: a hidden character becomes one '?' per byte.
    std::string line = terminal_safe(line_of(source_text, loc.line), true);
    if (!line.empty()) out += line_with_caret(line, loc.col);
  } else if (!loc.file.empty()) {
    out = fmt::format("{}: {}: {}\n", terminal_safe(loc.file, false), severity, message);
  } else {
    out = fmt::format("{}: {}\n", severity, message);
  }
  return out;
}

}  // namespace

std::string format_diagnostic(const Diagnostic& diag, std::string_view source_text,
                              std::string_view severity) {
  std::string out = format_one(diag.loc, diag.message, source_text, severity);
  for (const DiagnosticNote& note : diag.notes)
    out += format_one(note.loc, note.message,
                      note.loc.file == diag.loc.file ? source_text : std::string_view(), "note");
  return out;
}

std::string format_diagnostic(const Diagnostic& diag,
                              const std::map<std::string, std::string>& texts,
                              std::string_view severity) {
  auto text_of = [&](const SourceLoc& loc) {
    auto it = texts.find(loc.file);
    return it == texts.end() ? std::string_view() : std::string_view(it->second);
  };
  std::string out = format_one(diag.loc, diag.message, text_of(diag.loc), severity);
  for (const DiagnosticNote& note : diag.notes)
    out += format_one(note.loc, note.message, text_of(note.loc), "note");
  return out;
}

}  // namespace bpfql
