// Where query files are found: a path as given, else a library name ("syscalls/top") looked up
// in BPFQL_PATH folders, /etc/bpfql/queries, the installed query library, and the queries/ beside
// a build tree.
#pragma once

#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// The host's own query library, searched after BPFQL_PATH and before the installed one.
extern const char* const kSystemQueryDir;

// Folders searched for library names, in order: BPFQL_PATH's folders, /etc/bpfql/queries, the
// installed share/bpfql/queries (of the configured prefix, then of the prefix bpfql runs from),
// and the queries/ of the source tree a build tree was built from.
std::vector<std::string> query_search_dirs();

// A file path for FILE_OR_NAME, or an error that suggests the nearest library name.
Result<std::string> resolve_query(const std::string& file_or_name);

// "; did you mean 'syscalls/top'?" for a name close to a library name or to the last part of
// one (`top`), else a pointer to `bpfql list queries`.
std::string library_suggestion(const std::string& wanted);

// load_query_file, then its `include:` files (beside it, then in query_search_dirs()).
Result<QueryFile> load_library_file(const std::string& path);

// Every library query as (name, path), sorted by name; the first folder wins for a name.
// Include files (*.inc.yml) are not queries and are left out.
std::vector<std::pair<std::string, std::string>> library_queries();

// serve FILE_OR_DIR...: a directory stands for the *.yml files in it, in name order (a
// deployment's /etc/bpfql/queries.d). False (after a message) when a directory holds none.
bool expand_query_dirs(std::vector<std::string>& files);

}  // namespace bpfql
