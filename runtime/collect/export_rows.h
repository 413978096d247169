// Rows for `bpfql serve`: as build_rows (collector.h), except that a percentile() cell is the
// Histogram of its log-linear buckets instead of the computed percentiles, so that Prometheus
// gets buckets it can aggregate across instances and run histogram_quantile() on. Pure.
#pragma once

#include <vector>

#include "compiler/plan.h"
#include "runtime/collect/collector.h"
#include "runtime/collect/decode.h"
#include "runtime/collect/result.h"

namespace bpfql {

std::vector<ResultRow> build_export_rows(const PlanQuery& query, const QuerySnapshot& snapshot,
                                         const DecodeHooks& hooks);

}  // namespace bpfql
