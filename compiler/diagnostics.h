// Source positions, compiler errors as values, and their clang-style rendering.
#pragma once

#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bpfql {

// A place in a query file. Lines and columns count from 1; line 0 means "no position"
// (for example an error about a -p option given on the command line).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;

  SourceLoc shifted(int columns) const { return {file, line, col + columns}; }
};

// A second place an error concerns, printed after it as `file:line:col: note: message` with its
// own caret: where a macro or list used at the error's position is defined.
struct DiagnosticNote {
  SourceLoc loc;
  std::string message;
};

// One error a user can cause. `message` is the whole sentence after "error: ", including a
// "; did you mean 'x'?" suggestion when there is one.
struct Diagnostic {
  SourceLoc loc;
  std::string message;
  std::vector<DiagnosticNote> notes = {};  // outermost first
};

template <class T>
using Result = std::expected<T, Diagnostic>;

inline std::unexpected<Diagnostic> error_at(SourceLoc loc, std::string message) {
  return std::unexpected(Diagnostic{std::move(loc), std::move(message)});
}

// The candidate closest to `wanted` by edit distance, or "" when none is close enough to be a
// plausible typo (distance at most max(2, wanted.size() / 3)).
std::string nearest_name(std::string_view wanted, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" for the nearest candidate, or "" when there is none.
std::string did_you_mean(std::string_view wanted, const std::vector<std::string>& candidates);

// Renders `file:line:col: error: message`, then the source line and a caret under the column.
// `source_text` is the whole file the diagnostic points into ("" when unavailable). `severity`
// is "error", or "note" for what the checker only reports (CheckedQuery::notes).
std::string format_diagnostic(const Diagnostic& diag, std::string_view source_text,
                              std::string_view severity = "error");

// The same, with the text of every file the diagnostic and its notes point into (path → text):
// a note is often in another file (an included one) than the error.
std::string format_diagnostic(const Diagnostic& diag,
                              const std::map<std::string, std::string>& texts,
                              std::string_view severity = "error");

}  // namespace bpfql
