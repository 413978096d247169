#include "compiler/diagnostics.h"

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

std::string format_diagnostic(const Diagnostic& diag, std::string_view source_text) {
  const SourceLoc& loc = diag.loc;
  std::string out;
  if (loc.line > 0) {
    out = fmt::format("{}:{}:{}: error: {}\n", loc.file, loc.line, std::max(loc.col, 1),
                      terminal_safe(diag.message, false));
    std::string line = terminal_safe(line_of(source_text, loc.line), true);
    if (!line.empty()) {
      // Tabs keep their width in the caret line so the caret lands under the right character.
      std::string caret;
      for (int i = 0; i + 1 < loc.col && i < static_cast<int>(line.size()); ++i)
        caret += line[i] == '\t' ? '\t' : ' ';
      out += fmt::format("  {}\n  {}^\n", line, caret);
    }
  } else if (!loc.file.empty()) {
    out = fmt::format("{}: error: {}\n", loc.file, terminal_safe(diag.message, false));
  } else {
    out = fmt::format("error: {}\n", terminal_safe(diag.message, false));
  }
  return out;
}

}  // namespace bpfql
