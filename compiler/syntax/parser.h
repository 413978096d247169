// The expression parser: text → Expr tree with a position on every node. Knows nothing of
// probes, fields or types (that is the checker's job).
#pragma once

#include <string_view>

#include "compiler/syntax/ast.h"
#include "compiler/diagnostics.h"

namespace bpfql {

// Parses one whole expression. `start` is the position of text[0] in the query file; node
// positions are computed from it (same line; a newline in `text` moves to the next line, col 1).
Result<ExprPtr> parse_expression(std::string_view text, const SourceLoc& start);

// Parses one `select`/`group_by` item: `EXPR` or `EXPR as NAME` (NAME: [A-Za-z_][A-Za-z0-9_.()]*).
Result<SelectItem> parse_select_item(std::string_view text, const SourceLoc& start);

// Splits a comma-separated list of items at top-level commas (not inside parentheses or quotes),
// trimming each item and giving each its own position.
struct TextPiece {
  std::string text;
  SourceLoc loc;
};
std::vector<TextPiece> split_top_level(std::string_view text, const SourceLoc& start);

}  // namespace bpfql
