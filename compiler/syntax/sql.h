// The SQL-shaped one-liner (`bpfql -e`): a front-end that builds the same QueryFile the YAML
// loader builds, so that checking, code generation and the runtime never know which syntax a
// query came from. The grammar is grammar/sql.ebnf; docs/language.md puts each clause beside
// its YAML key.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// Parses one or more `;`-separated statements. `source` names the text in positions ("-e").
// `params` are the -p values: a `$name` the text uses without declaring it (`WITH $name = ...`)
// is declared with the type its value reads as (an integer, a duration with a unit, true/false,
// else a string); a `$name` with neither a declaration nor a value is an error.
Result<QueryFile> load_sql_text(const std::string& source, const std::string& text,
                                const std::map<std::string, std::string>& params);

// The clause and FROM keywords, upper case: for did-you-mean and for printers.
const std::vector<std::string>& sql_keywords();

}  // namespace bpfql
