// `unmatched: keep`: a span's end whose key has no open span is recorded too. Such a row has no
// `duration` and no `begin.` values, so what must decide with them is refused here (a `where`,
// an aggregate, a group_by key), and what only shows them (a streamed select item) prints them
// as absent.
#pragma once

#include "compiler/check/check.h"

namespace bpfql {

// The first node of `e` that exists only when the end found its begin (`duration`, a
// `begin.EXPR`), or null.
const Expr* begin_value_in(const Expr& e);

// Sets q.span->keep_unmatched from the spec once the query is typed and its pid sides are
// known; an error at the first `where`, aggregate or key that uses a begin value.
Result<void> check_unmatched(const SpanSpec& spec, CheckedQuery& q);

}  // namespace bpfql
