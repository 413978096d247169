// `nest: true`: a thread's spans nest like calls (a begin opens a span inside the ones open, an
// end closes the innermost), kept in a per-thread stack of begins; `depth` is a span's level.
// `report: flow`: the rows are every begin and every end in order (uflow), each select item
// and `where` evaluated at its row's own probe.
#pragma once

#include "compiler/check/check.h"
#include "compiler/check/expr.h"

namespace bpfql {

// The most levels a thread's stack of open spans holds: a begin deeper than that still counts
// in `depth` but stores nothing (counted in `dropped`), so its end is unmatched.
inline constexpr uint32_t kMaxNestDepth = 64;

// Sets q.span->nest and q.span->report_flow once the query is typed: the key is `tid`, no
// begin condition, no `report: open`; under `report: flow` the query streams, and every
// select item and `where` is typed again at the begin probes (`begin_scope`).
Result<void> check_nest(const SpanSpec& spec, const ExprScope& begin_scope, CheckedQuery& q);

}  // namespace bpfql
