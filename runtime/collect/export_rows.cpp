// percentile() cells as log-linear bucket histograms (see export_rows.h).
//
// build_rows already groups histogram slots by key and decodes keys; rather than repeat that, a
// percentile aggregate is presented to it as an lhist with one bucket per log-linear slot (slot s
// → the linear bucket [s, s+1), which is lhist slot s + 1), and the resulting buckets' bounds are
// then replaced by the log-linear ranges (buckets.h) they stand for.
#include "runtime/collect/export_rows.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "compiler/buckets.h"

namespace bpfql {
namespace {

// Shifts every slot of a histogram map by one: keyless maps are keyed by a u32 index, keyed ones
// by the key struct followed by a u64 slot.
PerCpuEntries shifted_slots(const PerCpuEntries& map, bool keyless, uint32_t key_size) {
  PerCpuEntries out = map;
  for (size_t i = 0; i < out.count(); ++i) {
    uint8_t* key = out.keys.data() + i * out.key_size;
    if (keyless) {
      uint32_t slot;
      std::memcpy(&slot, key, 4);
      ++slot;
      std::memcpy(key, &slot, 4);
    } else if (out.key_size >= key_size + 8) {
      uint64_t slot;
      std::memcpy(&slot, key + key_size, 8);
      ++slot;
      std::memcpy(key + key_size, &slot, 8);
    }
  }
  return out;
}

// A bucket [s, s+1) of the stand-in lhist → the log-linear range of slot s. Bounds beyond int64
// stay open (only +Inf covers them). The negative half of a signed value's slots (buckets.h)
// becomes negative ranges, and the buckets are put in the order of their values.
void to_log_linear(Histogram& h) {
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t n = buckets::kLogLinearSlots;
  // Both halves: the run from the lowest to the highest slot used spans every empty slot of the
  // positive half's top and the negative half's bottom (magnitude 0 among them, which would
  // repeat the bucket [0, 1)): only the buckets that hold something are kept.
  bool both = std::any_of(h.buckets.begin(), h.buckets.end(),
                          [&](const Bucket& b) { return b.low && *b.low >= n && b.count; });
  if (both)
    std::erase_if(h.buckets, [](const Bucket& b) { return b.count == 0; });
  for (auto& b : h.buckets) {
    if (!b.low || *b.low < 0) continue;
    if (*b.low >= n) {  // -v in [low, high): v in (-high, -low]
      auto r = buckets::log_linear_range(static_cast<int>(*b.low - n));
      uint64_t top = r.high - 1;  // the largest magnitude, up to 2^63 + 2^59 - 1
      b.low = top > kMax ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(top);
      b.high = -static_cast<int64_t>(std::min(r.low, kMax)) + 1;
      continue;
    }
    auto r = buckets::log_linear_range(static_cast<int>(*b.low));
    b.low = static_cast<int64_t>(std::min(r.low, kMax));
    if (r.high > kMax)
      b.high.reset();
    else
      b.high = static_cast<int64_t>(r.high);
  }
  std::stable_sort(h.buckets.begin(), h.buckets.end(), [](const Bucket& a, const Bucket& b) {
    if (!a.low || !b.low) return !a.low && b.low;  // an open lower end first
    return *a.low < *b.low;
  });
}

}  // namespace

std::vector<ResultRow> build_export_rows(const PlanQuery& query, const QuerySnapshot& snapshot,
                                         const DecodeHooks& hooks) {
  bool any = false;
  for (const auto& a : query.aggregates) any = any || a.kind == AggKind::Percentile;
  if (!any) return build_rows(query, snapshot, hooks);

  PlanQuery standin = query;
  QuerySnapshot shifted = snapshot;
  for (size_t i = 0; i < standin.aggregates.size(); ++i) {
    auto& a = standin.aggregates[i];
    if (a.kind != AggKind::Percentile) continue;
    a.kind = AggKind::Lhist;
    a.lhist_min = 0;
    a.lhist_max = buckets::percentile_slots(a.is_signed);
    a.lhist_step = 1;
    if (i < shifted.hists.size())
      shifted.hists[i] = shifted_slots(snapshot.hists[i], query.keys.empty(), query.key_size);
  }
  std::vector<ResultRow> rows = build_rows(standin, shifted, hooks);

  std::vector<size_t> columns;  // the percentile columns
  for (size_t c = 0; c < query.columns.size(); ++c)
    for (const auto& a : query.aggregates)
      if (a.kind == AggKind::Percentile && a.name == query.columns[c]) columns.push_back(c);
  for (auto& row : rows)
    for (size_t c : columns)
      if (c < row.cells.size())
        if (auto* h = std::get_if<Histogram>(&row.cells[c])) to_log_linear(*h);
  return rows;
}

}  // namespace bpfql
