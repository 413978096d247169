// A percentile() is the midpoint of a log-linear bucket, which can pass the largest (or smallest)
// value the bucket saw: 4096-byte reads alone give a p50 of 4223. The collector clamps each
// percentile to the min() and max() of the same expression; a query that does not select them
// gets them as hidden aggregates, so that a percentile is never outside the observed range.
// The cost: two compares per event in the value struct (plus its lookup when the query has no
// other non-histogram aggregate).
#pragma once

#include <string>
#include <string_view>

#include "compiler/check/check.h"

namespace bpfql {

// The name of a hidden bound (never a column: it starts with a byte no query text can hold).
std::string percentile_bound_name(AggKind kind, std::string_view expr_text);
bool is_percentile_bound(std::string_view aggregate_name);

// Adds min(E) and max(E) for every percentile(E, ...) whose E has no min()/max() in the query.
void add_percentile_bounds(CheckedQuery& query);

}  // namespace bpfql
