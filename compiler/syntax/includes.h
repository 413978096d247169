// Shared pieces of a query library: `macros:` (named expressions), `lists:` (named values) and
// `params:` kept in a `*.inc.yml` file that query files name with `include:`. Include files are
// found beside the including file first, then in the library folders (BPFQL_PATH, ...), and
// hold only `macros:`, `lists:` and `params:`. docs/language.md, "Macros and include".
#pragma once

#include <string>
#include <vector>

#include "compiler/syntax/query.h"

namespace bpfql {

// Reads every file `file.includes` names and merges its macros, lists and parameters into `file`:
// included parameters come before the file's own (which may redeclare one to change its
// default); a macro or list defined twice is an error at the second definition, naming the first.
Result<void> resolve_includes(QueryFile& file, const std::vector<std::string>& library_dirs);

// True for a file name that is an include file, not a query ("web.inc.yml").
bool is_include_file_name(std::string_view path);

}  // namespace bpfql
