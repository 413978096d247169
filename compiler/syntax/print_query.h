// `bpfql convert`: a loaded QueryFile printed back in either syntax. Expressions and probe specs
// are printed as written (both syntaxes share one expression grammar), so that a query converted
// from one syntax to the other and back checks to the same Plan.
#pragma once

#include <string>

#include "compiler/diagnostics.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// YAML a person would write: one query as a mapping, several under `queries:`.
Result<std::string> print_yaml(const QueryFile& file);

// One SQL statement per query, separated by ";" and a line break. A legacy (BPFQL:) query and
// a span the SQL form cannot spell are errors.
Result<std::string> print_sql(const QueryFile& file);

// 5000000000 → "5s": the largest unit that divides it exactly.
std::string duration_text(uint64_t ns);

}  // namespace bpfql
