// The unit of a typed expression (units.h): `duration` and `ts` are ns, known tracepoint fields
// are bytes or ns (a read's `count` and return value, block `bytes`, sched `delay`/`runtime`),
// and + - * / with numbers carry units through. Everything else has none.
#pragma once

#include <vector>

#include "compiler/syntax/ast.h"
#include "compiler/check/check.h"
#include "compiler/units.h"

namespace bpfql {

Unit expr_unit(const Expr& expr, const std::vector<ProbeRef>& probes);

}  // namespace bpfql
