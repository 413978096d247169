// Checking a span: its probes, its keys (the shared ones and those of the items written as
// `{probe, key, where}`), the conditions at its begin, and that every begin key can meet every
// end key.
#pragma once

#include <vector>

#include "compiler/check/check.h"
#include "compiler/check/expr.h"

namespace bpfql {

// Resolves the begin and end probes (the end's into `out.probes`), types the keys and the begin
// conditions, and fills `out.span`.
Result<void> check_span(const SpanSpec& span, const KernelCatalog& catalog, ExprScope scope,
                        CheckedQuery& out);

// The conditions of end items with their own `where`, typed like the query's `where` (`scope`
// is the end's, `duration` and `begin.` included) at the probes of each item.
Result<void> check_span_end_rules(const SpanSpec& span, const ExprScope& scope, CheckedQuery& out);

// Conditions typed at `scope`, split at top-level `&&` (check.cpp).
Result<void> check_conditions(const std::vector<Located>& texts, const ExprScope& scope,
                              std::vector<ExprPtr>& out);

}  // namespace bpfql
