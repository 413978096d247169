#include "runtime/collect/open_spans.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "compiler/buckets.h"
#include "runtime/collect/decode.h"

namespace bpfql {
namespace {

// A source's value in one span, as 64 bits (sign-extended when the capture is signed).
uint64_t source_value(const SpanValueSource& s, std::span<const uint8_t> span, uint64_t now_ns) {
  uint64_t begin = read_unsigned(span, 0, 8);
  if (s.kind == SpanValueSource::Kind::Age) return now_ns > begin ? now_ns - begin : 0;
  uint64_t v = read_unsigned(span, s.offset, s.size);
  if (s.is_signed && s.size < 8 && (v >> (s.size * 8 - 1)) & 1) v |= ~uint64_t{0} << (s.size * 8);
  return v;
}

void add_to(std::vector<uint8_t>& value, uint32_t offset, uint64_t x) {
  uint64_t sum;
  std::memcpy(&sum, value.data() + offset, 8);
  sum += x;  // two's complement: signed sums too
  std::memcpy(value.data() + offset, &sum, 8);
}

// The slot the program's bpfql_*_slot helpers would give `v` (compiler/buckets.h).
uint64_t slot_of(const PlanAggregate& a, uint64_t v) {
  auto sv = static_cast<int64_t>(v);
  switch (a.kind) {
    case AggKind::Hist: {
      if (a.is_signed && sv < 0) return 0;
      if (v == 0) return 1;
      return static_cast<uint64_t>(63 - __builtin_clzll(v)) + 2;
    }
    case AggKind::Lhist: {
      uint64_t last = static_cast<uint64_t>(buckets::lhist_slots(a.lhist_min, a.lhist_max,
                                                                 a.lhist_step)) - 1;
      auto step = static_cast<uint64_t>(a.lhist_step);
      auto min = static_cast<uint64_t>(a.lhist_min);
      if (a.is_signed) {
        if (sv < a.lhist_min) return 0;
        if (sv >= a.lhist_max) return last;
        return 1 + (v - min) / step;
      }
      if (a.lhist_min >= 0 && v < min) return 0;
      if (a.lhist_max <= 0 || v >= static_cast<uint64_t>(a.lhist_max)) return last;
      return 1 + (v - min) / step;
    }
    case AggKind::Percentile:
      return static_cast<uint64_t>(a.is_signed ? buckets::log_linear_slot_signed(sv)
                                               : buckets::log_linear_slot(v));
    default:
      return 0;
  }
}

}  // namespace

QuerySnapshot open_span_snapshot(const PlanQuery& q, const PerCpuEntries& spans,
                                 uint64_t now_ns) {
  const bool keyless = q.keys.empty();
  const uint32_t key_size = keyless ? 4 : q.key_size;
  const uint32_t stride = (q.value_size + 7) / 8 * 8;
  // Group key bytes -> value struct; (group key, slot) -> count per histogram.
  std::map<std::vector<uint8_t>, std::vector<uint8_t>> values;
  std::vector<std::map<std::vector<uint8_t>, uint64_t>> hists(q.aggregates.size());
  if (keyless && stride > 0) values[std::vector<uint8_t>(4, 0)].assign(stride, 0);  // one row
  // A walk by get_next_key restarts from the first key when the key it stands on ends meanwhile:
  // a span read twice is counted once.
  std::set<std::vector<uint8_t>> seen;
  for (size_t i = 0; i < spans.count(); ++i) {
    auto span_key = spans.key(i);
    if (!seen.emplace(span_key.begin(), span_key.end()).second) continue;
    std::span<const uint8_t> span = spans.value(i).first(std::min<size_t>(
        spans.stride, spans.value(i).size()));
    std::vector<uint8_t> key(key_size, 0);
    for (size_t k = 0; k < q.keys.size() && k < q.open_keys.size(); ++k) {
      const SpanValueSource& s = q.open_keys[k];
      uint32_t n = std::min(s.size, q.keys[k].size);
      if (s.offset + n <= span.size() && q.keys[k].offset + n <= key.size())
        std::memcpy(key.data() + q.keys[k].offset, span.data() + s.offset, n);
    }
    if (stride > 0) {
      auto& value = values[key];
      if (value.empty()) value.assign(stride, 0);
      uint64_t n = read_unsigned(value, 0, 8);
      for (size_t a = 0; a < q.aggregates.size() && a < q.open_args.size(); ++a) {
        const PlanAggregate& agg = q.aggregates[a];
        uint64_t x = source_value(q.open_args[a], span, now_ns);
        if (agg.kind == AggKind::Sum || agg.kind == AggKind::Avg || agg.kind == AggKind::Stats)
          add_to(value, agg.sum_offset, x);
        if (agg.kind == AggKind::Min || agg.kind == AggKind::Max) {
          uint64_t current = read_unsigned(value, agg.minmax_offset, 8);
          bool better = agg.is_signed
                            ? (agg.kind == AggKind::Min
                                   ? static_cast<int64_t>(x) < static_cast<int64_t>(current)
                                   : static_cast<int64_t>(x) > static_cast<int64_t>(current))
                            : (agg.kind == AggKind::Min ? x < current : x > current);
          if (n == 0 || better) std::memcpy(value.data() + agg.minmax_offset, &x, 8);
        }
      }
      add_to(value, 0, 1);
    }
    for (size_t a = 0; a < q.aggregates.size() && a < q.open_args.size(); ++a) {
      const PlanAggregate& agg = q.aggregates[a];
      if (!is_histogram(agg.kind)) continue;
      uint64_t slot = slot_of(agg, source_value(q.open_args[a], span, now_ns));
      std::vector<uint8_t> hkey;
      if (keyless) {
        auto s32 = static_cast<uint32_t>(slot);
        hkey.resize(4);
        std::memcpy(hkey.data(), &s32, 4);
      } else {
        hkey = key;
        hkey.resize(key.size() + 8);
        std::memcpy(hkey.data() + key.size(), &slot, 8);
      }
      ++hists[a][hkey];
    }
  }
  QuerySnapshot out;
  out.values = PerCpuEntries{key_size, stride, 1, {}, {}};
  for (const auto& [key, value] : values) out.values.add(key, value);
  out.hists.resize(q.aggregates.size());
  for (size_t a = 0; a < q.aggregates.size(); ++a) {
    if (!is_histogram(q.aggregates[a].kind)) continue;
    PerCpuEntries& h = out.hists[a];
    h = PerCpuEntries{keyless ? 4u : q.key_size + 8, 8, 1, {}, {}};
    for (const auto& [key, count] : hists[a])
      h.add(key, std::span(reinterpret_cast<const uint8_t*>(&count), 8));
  }
  return out;
}

}  // namespace bpfql
