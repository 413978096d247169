// A reload (runtime/serve/reload.h) keeps the counters of a query that did not change: its maps
// in the newly loaded program start with what the old program's maps hold, so a counter that
// Prometheus scraped continues instead of restarting from zero.
#pragma once

#include <string>

#include "compiler/plan.h"
#include "runtime/load/bpf_object.h"

namespace bpfql {

// Copies every entry of `from`'s maps in `old_bpf` (values, histograms, dropped keys, open span
// begins) into the same maps of `to` in `new_bpf`, which must not be attached yet. Returns "" on
// success, else why the state cannot be carried (a stack-keyed query: stack ids belong to the
// old program's stack map; maps of another shape); then `to`'s maps are left as they were
// created (empty) or partly filled, and the caller must treat the query as new.
std::string carry_query_state(const PlanQuery& from, const BpfObject& old_bpf, const PlanQuery& to,
                              const BpfObject& new_bpf);

}  // namespace bpfql
