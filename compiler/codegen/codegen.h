// Code generation: a checked program → Plan (BCC-dialect C + the typed layout of its maps).
#pragma once

#include "compiler/check/check.h"
#include "compiler/plan.h"

namespace bpfql {

// Generates one C program for every query of the file. Each query's maps and functions are
// prefixed `qN_` (N = its index). The C reads tracepoint records through structs laid out from
// the catalog's formats (never kernel headers), so it compiles without tracefs.
Result<Plan> generate_plan(const CheckedProgram& program);

}  // namespace bpfql
