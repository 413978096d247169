#include "compiler/diagnostics.h"

#include <algorithm>

#include <fmt/format.h>

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

std::string_view line_of(std::string_view text, int line) {
  size_t start = 0;
  for (int n = 1; n < line; ++n) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string_view found = text.substr(start, end == std::string_view::npos ? text.npos : end - start);
  if (!found.empty() && found.back() == '\r') found.remove_suffix(1);
  return found;
}

}  // namespace

std::string nearest_name(std::string_view wanted, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, wanted.size() / 3) + 1;
  for (const auto& candidate : candidates) {
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
    out = fmt::format("{}:{}:{}: error: {}\n", loc.file, loc.line, std::max(loc.col, 1), diag.message);
    std::string_view line = line_of(source_text, loc.line);
    if (!line.empty()) {
      // Tabs keep their width in the caret line so the caret lands under the right character.
      std::string caret;
      for (int i = 0; i + 1 < loc.col && i < static_cast<int>(line.size()); ++i)
        caret += line[i] == '\t' ? '\t' : ' ';
      out += fmt::format("  {}\n  {}^\n", line, caret);
    }
  } else if (!loc.file.empty()) {
    out = fmt::format("{}: error: {}\n", loc.file, diag.message);
  } else {
    out = fmt::format("error: {}\n", diag.message);
  }
  return out;
}

}  // namespace bpfql
