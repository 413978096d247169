// Where query files are found: a path as given, else a library name ("syscalls/top") looked up
// in BPFQL_PATH folders, the installed query library, and the queries/ beside a build tree.
#pragma once

#include <string>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

// Folders searched for library names, in order.
std::vector<std::string> query_search_dirs();

// A file path for FILE_OR_NAME, or an error that suggests the nearest library name.
Result<std::string> resolve_query(const std::string& file_or_name);

// Every library query as (name, path), sorted by name; the first folder wins for a name.
std::vector<std::pair<std::string, std::string>> library_queries();

}  // namespace bpfql
