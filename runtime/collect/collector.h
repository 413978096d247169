// From one read of a query's maps (raw per-CPU bytes) to the sorted, limited rows of an
// IntervalResult. Pure: the kernel side (map_reader.h) fills a QuerySnapshot, tests build one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/plan.h"
#include "runtime/collect/decode.h"
#include "runtime/collect/result.h"

namespace bpfql {

// The raw contents of one per-CPU map: count() entries, each a key and ncpus × stride value bytes.
struct PerCpuEntries {
  uint32_t key_size = 0;
  uint32_t stride = 0;  // bytes per CPU per entry: the value size rounded up to 8
  uint32_t ncpus = 0;
  std::vector<uint8_t> keys;
  std::vector<uint8_t> values;

  size_t count() const { return key_size == 0 ? 0 : keys.size() / key_size; }
  std::span<const uint8_t> key(size_t i) const {
    return std::span(keys).subspan(i * key_size, key_size);
  }
  std::span<const uint8_t> value(size_t i) const {
    size_t per_entry = size_t{stride} * ncpus;
    return std::span(values).subspan(i * per_entry, per_entry);
  }
  // Appends one entry (key bytes, then all CPUs' values).
  void add(std::span<const uint8_t> key, std::span<const uint8_t> value);
};

// One read of a query's maps. Arrays (keyless queries) appear as entries keyed by a u32 index.
struct QuerySnapshot {
  PerCpuEntries values;              // the value map; empty when the query has none
  std::vector<PerCpuEntries> hists;  // parallel to PlanQuery::aggregates; used by histogram kinds
  uint64_t dropped = 0;
};

// Whether a read found anything: a nonzero counter, bucket or value, or a dropped update. (A map
// that is read and cleared, or differenced, holds zeros when nothing happened since the last read.)
bool holds_events(const QuerySnapshot& snapshot);

// A digest of every key and value read, to tell whether a cumulative query's read repeats the
// previous one.
size_t snapshot_digest(const QuerySnapshot& snapshot);

// Rows, one per group key (a keyless query has exactly one), cells in PlanQuery::columns order.
// `interval_s` is the seconds the print covers: `$interval` and rate() in computed columns.
std::vector<ResultRow> build_rows(const PlanQuery& query, const QuerySnapshot& snapshot,
                                  const DecodeHooks& hooks, double interval_s = 0);

// A computed column's value from the row's aggregate cells (PlanQuery::aggregates order), as a
// double; empty (monostate) when an operand has no value or a division is by zero.
Cell evaluate_computed(const PlanComputed& computed, std::span<const Cell> aggregates,
                       double interval_s);

// Orders rows by PlanQuery::order_by (default: the first aggregate), descending unless the
// query says otherwise; ties by key columns ascending so output is stable. Then applies limit.
void sort_and_limit(const PlanQuery& query, std::vector<ResultRow>& rows);

// Three-way comparison used for ordering; histograms compare by total count, stats by count,
// percentiles by their first value, stacks by their frames. Cells of different kinds compare by
// kind (monostate first).
int compare_cells(const Cell& a, const Cell& b);

}  // namespace bpfql
