// The struct a tracepoint program reads its record through, laid out from the catalog's format
// (never from kernel headers, whose versions need not match the running kernel).
#pragma once

#include <set>
#include <string>

#include "compiler/check/catalog.h"
#include "compiler/diagnostics.h"

namespace bpfql::codegen {

struct TracepointStruct {
  std::string tag;                 // "tp_sched_sched_switch": declared as `struct tp_...`
  std::string declaration;         // the struct and its layout assertion
  std::set<std::string> readable;  // fields declared by name (the rest are padding)
};

// `taken` holds the tags already used in the program (two tracepoints whose names differ only in
// where the category ends get different tags). Fails on a category or name that is not
// [A-Za-z0-9_].
Result<TracepointStruct> tracepoint_struct(const TracepointFormat& format, const SourceLoc& loc,
                                           std::set<std::string>& taken);

}  // namespace bpfql::codegen
