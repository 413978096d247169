// Fusion: the unit of attachment is the probe, not the query. Every query of a program whose
// function attaches to the same tracepoint runs in one BPF program on it: each query's body in
// turn, in its own block, its `return 0`s jumping to the block's end. The probe's fixed cost (the
// attach, the record, the program's entry) is paid once per event; each query pays only for its
// own filters and updates. Each body keeps its own maps, so output, dropped and lost counts stay
// per query.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/internal.h"
#include "compiler/plan.h"

namespace bpfql::codegen {

// The statements one query's function runs at one attach point (FunctionGen::body_lines()).
struct AttachedBody {
  size_t query = 0;   // index into Plan::queries
  size_t attach = 0;  // index into that query's attaches
  std::string comment;  // "query 'x' (file:line): tracepoint:..."
  std::vector<std::string> lines;
};

// Declarations a body may open with that read the same thing in every query (a helper with no
// argument): in a fused program, one that two bodies read, and one of them before any of its
// filters, is read once at the top (never earlier than a query alone would have read it).
const std::vector<std::string>& hoistable_reads();

// Groups the bodies of different queries attached to the same tracepoint; for each group of two
// or more queries, writes one function running them all in query order and points those
// queries' attaches at it (raw tracepoint only if every body can run as one). A query with two
// functions on one tracepoint (a span whose begin and end are the same probe) keeps its own
// programs there: their order is the query's. Returns the fused functions' text ("" if none);
// adds the tracepoints whose struct they name to `state.tracepoints_used`.
std::string fuse_by_attach_point(const std::vector<AttachedBody>& bodies, Plan& plan,
                                 ProgramState& state);

}  // namespace bpfql::codegen
