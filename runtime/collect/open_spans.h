// `report: open`: a span query's rows are its spans still open. At each print the runtime reads
// the open-span hash (key -> begin time and captures) and lays every open span out as the
// program would have aggregated it: its group key built from the captures the keys name, its
// value struct (n, sums, min/max) and histogram slots from the captures (or age) the aggregates
// name. The result is a QuerySnapshot of one CPU, which build_rows turns into rows like any
// other query's. Pure: map_reader.cpp reads the hash, tests build the entries.
#pragma once

#include <cstdint>

#include "compiler/plan.h"
#include "runtime/collect/collector.h"

namespace bpfql {

// `spans`: the open-span hash as read (one value per entry: a plain hash). `now_ns`: the print
// time on the clock bpf_ktime_get_ns reads (CLOCK_MONOTONIC), for `age`.
QuerySnapshot open_span_snapshot(const PlanQuery& query, const PerCpuEntries& spans,
                                 uint64_t now_ns);

}  // namespace bpfql
