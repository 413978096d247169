// Pure decoding: bytes laid out as the Plan says → typed cells. Key and event fields, per-CPU
// value structs merged over CPUs, histogram slots → buckets and percentiles. No kernel, no libbcc:
// everything here is tested with synthetic bytes (tests/runtime/collect/decode_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// Integers as the kernel wrote them (native byte order), 1/2/4/8 bytes; out of range reads are 0.
uint64_t read_unsigned(std::span<const uint8_t> record, uint32_t offset, uint32_t size);
int64_t read_signed(std::span<const uint8_t> record, uint32_t offset, uint32_t size);

// Stack id → symbolized frames. The session supplies one backed by the query's stack map.
using StackSymbolizer = std::function<StackValue(ValueKind kind, int32_t stack_id, int pid)>;
// A stack's addresses (as a streamed event carries them, 0 after the last) → symbolized frames.
using FrameSymbolizer =
    std::function<StackValue(ValueKind kind, std::span<const uint64_t> addresses, int pid)>;

// Raw cell → displayed cell (syscall(), user(), ...). The session supplies apply_display.
using DisplayFunction =
    std::function<Cell(Display d, const Cell& raw, int pid, std::span<const std::string> probes)>;

struct DecodeHooks {
  StackSymbolizer stacks;   // may be empty: stack fields then decode to empty StackValues
  DisplayFunction display;  // may be empty: display functions are then not applied
  FrameSymbolizer frames;   // for stacks held as addresses; may be empty, as `stacks`
};

// The process a record belongs to (for usym()/ustack): the integer field named "pid", else -1.
int record_pid(std::span<const PlanField> fields, std::span<const uint8_t> record);

// One key or event field, with its display function applied.
Cell decode_field(const PlanField& field, std::span<const uint8_t> record, int pid,
                  std::span<const std::string> probe_names, const DecodeHooks& hooks);

// The bytes one CPU's copy of a per-CPU value occupies: the value size rounded up to 8.
inline uint32_t percpu_stride(uint32_t value_size) { return (value_size + 7) / 8 * 8; }

// A query's value struct (`u64 n` first) over all CPUs: `values` holds ncpus copies of `stride`
// bytes. Returns one cell per PlanQuery::aggregates entry, in order; histogram kinds (which live
// in maps of their own) get monostate. n and sums add; min/max only over CPUs whose n > 0.
std::vector<Cell> merge_value_cells(const PlanQuery& query, std::span<const uint8_t> values,
                                    uint32_t stride, uint32_t ncpus);

// Histogram slot counters (already summed over CPUs) → the aggregate's cell: Histogram for
// Hist/Lhist, PercentileValue for Percentile (monostate when there is no sample).
Cell histogram_cell(const PlanAggregate& agg, std::span<const uint64_t> slots);

// The pieces of histogram_cell.
Histogram log2_histogram(std::span<const uint64_t> slots);
Histogram linear_histogram(int64_t min, int64_t max, int64_t step, std::span<const uint64_t> slots);
PercentileValue percentiles(std::span<const double> ps, std::span<const uint64_t> slots);

// Adds ncpus per-CPU u64 counters (stride 8) into one.
uint64_t sum_percpu_u64(std::span<const uint8_t> values, uint32_t ncpus);

// One streamed event: ts at offset 0, then a cell per PlanQuery::event_fields; a span end kept
// without its begin (PlanQuery::begun_offset byte 0) has empty cells for its from_begin fields.
StreamRow decode_event(const PlanQuery& query, std::span<const uint8_t> event,
                       const DecodeHooks& hooks);

}  // namespace bpfql
