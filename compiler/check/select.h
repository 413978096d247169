// Sorting `select` and `group_by` items into group keys, aggregates and streamed values,
// with the SQL rule: a plain value next to aggregates must be a group_by key.
#pragma once

#include "compiler/check/check.h"
#include "compiler/check/expr.h"

namespace bpfql {

// Fills out.keys, out.aggregates, out.stream and out.columns. `scope` carries the probes and
// params; its role is set per item.
Result<void> check_select(const QuerySpec& spec, const ExprScope& scope, CheckedQuery& out);

}  // namespace bpfql
