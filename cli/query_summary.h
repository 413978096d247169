// How `list queries` and `describe` show a library query: its parameters, probes and outputs,
// and whether this host can run it.
#pragma once

#include <string>
#include <vector>

#include "compiler/syntax/query.h"

namespace bpfql {

// "-p NAME=TYPE (default V)  DOC", one line per parameter the file declares (file-level first).
std::vector<std::string> param_lines(const QueryFile& file);

// A parameter value as it would be written after -p NAME=.
std::string param_value_text(const ParamValue& value);

}  // namespace bpfql
