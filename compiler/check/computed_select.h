// Select items computed from aggregates at print time, in user space: `sum(duration) / 1000`,
// `count() / $interval`, `rate(count())`, `max(x) - min(x)`. The kernel keeps only the
// aggregates; the arithmetic never runs per event.
#pragma once

#include <functional>

#include "compiler/check/check.h"
#include "compiler/check/expr.h"

namespace bpfql {

// True when `expr` is arithmetic over aggregates (or rate(...)) rather than an aggregate or a
// plain value.
bool is_computed_item(const Expr& expr);

// Adds (or finds) the aggregate a call names and returns its index in CheckedQuery::aggregates.
using AddAggregate = std::function<Result<int>(Expr& call)>;

// Compiles `expr` into `out.program` and its unit. `params` give $NAME values; `$interval` is
// the seconds the print covers (unless a parameter has that name).
Result<void> compile_computed(Expr& expr, const ExprScope& scope, const CheckedQuery& query,
                              const AddAggregate& add_aggregate, PlanComputed& out);

}  // namespace bpfql
