// Shared by the SQL front-end's files (sql_parser.cpp, sql_from.cpp): one statement being read.
// Not an interface for the rest of the compiler.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/sql_scan.h"

namespace bpfql::sql {

// The one-liner's text (comments blanked) and how offsets map to positions.
class Source {
 public:
  Source(std::string path, std::string_view text);

  const std::string& path() const { return path_; }
  std::string& text() { return text_; }
  std::string_view text() const { return text_; }
  SourceLoc loc(size_t offset) const;
  size_t offset(const SourceLoc& loc) const;
  // The span's text without blanks at either end, and where it starts.
  Located located(Span span) const;
  std::unexpected<Diagnostic> error(size_t offset, std::string message) const {
    return error_at(loc(offset), std::move(message));
  }
  // An expression's parse error where the unexpected token is a word close to a keyword (a
  // misspelled clause) says so.
  Diagnostic with_keyword_hint(Diagnostic diag) const;
  // "unexpected 'x'", with a keyword did-you-mean, for stray text at `offset`.
  std::unexpected<Diagnostic> stray(size_t offset, std::string_view after) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

// A `w.` or `s.` prefix of a JOIN, blanked out of the text where it was written.
struct AliasUse {
  size_t offset = 0;
  size_t length = 0;  // of `alias.`
  bool begin_side = false;
};

// What FROM said: the probes, or for a JOIN the span, and where the aliases were used.
struct FromClause {
  std::vector<Located> probes;
  std::optional<SpanSpec> span;
  std::vector<AliasUse> alias_uses;  // in text order, over the whole statement
  std::optional<Span> on;            // the ON clause's body
};

// Reads `FROM ...` in `body` (the statement is `statement`); for a JOIN, blanks every alias
// prefix in the statement's text and records it.
Result<FromClause> read_from(Source& source, Span statement, Span body);

// For a JOIN: puts the ON keys and the WHERE conjuncts where a span wants them (spec.span's
// key, begin_where, spec.where). `where` is the WHERE clause's body, if any.
Result<void> read_join_on_and_where(const Source& source, const FromClause& from,
                                    std::optional<Span> where, QuerySpec& spec);

// The error for a begin value used at the end of a span (`w.comm` in select).
std::unexpected<Diagnostic> needs_captures(const Source& source, const AliasUse& use);

// The top-level conjuncts of `span` (split at AND and &&), or the whole span when an OR at the
// top level makes splitting wrong.
std::vector<Span> conjuncts(std::string_view text, Span span);
// `(a || b)` → `a || b`: a conjunct's own parentheses, which an ANDed list item does not need.
Span without_parentheses(std::string_view text, Span span);

// The aliases used in [begin, end).
std::vector<AliasUse> uses_in(const std::vector<AliasUse>& uses, size_t begin, size_t end);

// The span's text with the alias prefixes removed (for select and group_by items, whose text is
// their column name), trimmed, with the position of its first character.
Located without_aliases(const Source& source, Span span, const std::vector<AliasUse>& uses);

// Expression pieces, checked by the expression parser (so that a stray word gets a
// did-you-mean from here) but handed on as text, as the YAML loader hands them on.
Result<void> check_expression(const Source& source, const Located& piece);
Result<void> check_select_item(const Source& source, const Located& piece);

}  // namespace bpfql::sql
