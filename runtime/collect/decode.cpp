// Pure decoding of Plan-described bytes into cells (see decode.h).
#include "runtime/collect/decode.h"

#include "runtime/collect/flow_rows.h"
#include "runtime/collect/names.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/buckets.h"

namespace bpfql {

uint64_t read_unsigned(std::span<const uint8_t> record, uint32_t offset, uint32_t size) {
  if (size_t{offset} + size > record.size()) return 0;
  const uint8_t* p = record.data() + offset;
  switch (size) {
    case 1:
      return p[0];
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

int64_t read_signed(std::span<const uint8_t> record, uint32_t offset, uint32_t size) {
  uint64_t raw = read_unsigned(record, offset, size);
  switch (size) {
    case 1:
      return static_cast<int8_t>(raw);
    case 2:
      return static_cast<int16_t>(raw);
    case 4:
      return static_cast<int32_t>(raw);
    default:
      return static_cast<int64_t>(raw);
  }
}

namespace {

std::string read_string(std::span<const uint8_t> record, uint32_t offset, uint32_t size) {
  if (offset >= record.size()) return {};
  size_t avail = std::min<size_t>(size, record.size() - offset);
  const char* p = reinterpret_cast<const char*>(record.data() + offset);
  return std::string(p, strnlen(p, avail));
}

BytesValue read_bytes(std::span<const uint8_t> record, uint32_t offset, uint32_t size) {
  if (offset >= record.size()) return {};
  auto bytes = record.subspan(offset, std::min<size_t>(size, record.size() - offset));
  return BytesValue{std::vector<uint8_t>(bytes.begin(), bytes.end())};
}

bool is_integer(ValueKind k) { return k == ValueKind::Unsigned || k == ValueKind::Signed; }

Cell raw_field(const PlanField& f, std::span<const uint8_t> record, int pid,
               const DecodeHooks& hooks) {
  switch (f.kind) {
    case ValueKind::Unsigned:
      return read_unsigned(record, f.offset, f.size);
    case ValueKind::Signed:
      return read_signed(record, f.offset, f.size);
    case ValueKind::Bool:
      return read_unsigned(record, f.offset, f.size) != 0;
    case ValueKind::String:
      return read_string(record, f.offset, f.size);
    case ValueKind::Bytes:
      return read_bytes(record, f.offset, f.size);
    case ValueKind::KernelStack:
    case ValueKind::UserStack: {
      if (f.size > 4) {  // the addresses themselves (a streamed event), 0 after the last
        std::vector<uint64_t> addresses;
        for (uint32_t at = f.offset; at + 8 <= f.offset + f.size; at += 8) {
          uint64_t a = read_unsigned(record, at, 8);
          if (a == 0) break;
          addresses.push_back(a);
        }
        if (!hooks.frames) return StackValue{};
        return hooks.frames(f.kind, addresses, pid);
      }
      auto id = static_cast<int32_t>(read_signed(record, f.offset, 4));
      if (!hooks.stacks) return StackValue{};
      return hooks.stacks(f.kind, id, pid);
    }
  }
  return std::monostate{};
}

}  // namespace

int record_pid(std::span<const PlanField> fields, std::span<const uint8_t> record) {
  for (const char* name : {"pid", "tid"}) {
    for (const auto& f : fields) {
      if (f.name == name && is_integer(f.kind) && f.display == Display::None)
        return static_cast<int>(read_signed(record, f.offset, f.size));
    }
  }
  return -1;
}

Cell decode_field(const PlanField& field, std::span<const uint8_t> record, int pid,
                  std::span<const std::string> probe_names, const DecodeHooks& hooks) {
  Cell raw = raw_field(field, record, pid, hooks);
  if (field.display == Display::Symbolic) {  // the table travels with the field
    if (const auto* u = std::get_if<uint64_t>(&raw)) return symbolic_text(*u, field.symbols, field.symbol_flags);
    if (const auto* s = std::get_if<int64_t>(&raw))
      return symbolic_text(static_cast<uint64_t>(*s), field.symbols, field.symbol_flags);
    return raw;
  }
  if (field.display == Display::None || !hooks.display) return raw;
  return hooks.display(field.display, raw, pid, probe_names);
}

namespace {

// Per-aggregate accumulation over CPUs.
struct Merge {
  uint64_t n = 0;
  uint64_t sum = 0;  // wrapping add is right for two's complement signed sums too
  bool has_extreme = false;
  uint64_t extreme = 0;
};

bool better(const PlanAggregate& a, uint64_t candidate, uint64_t current) {
  bool less = a.is_signed ? static_cast<int64_t>(candidate) < static_cast<int64_t>(current)
                          : candidate < current;
  bool greater = a.is_signed ? static_cast<int64_t>(candidate) > static_cast<int64_t>(current)
                             : candidate > current;
  return a.kind == AggKind::Min ? less : greater;
}

Cell signed_or_unsigned(bool is_signed, uint64_t bits) {
  if (is_signed) return static_cast<int64_t>(bits);
  return bits;
}

double as_double(bool is_signed, uint64_t bits) {
  return is_signed ? static_cast<double>(static_cast<int64_t>(bits)) : static_cast<double>(bits);
}

Cell finish(const PlanAggregate& a, const Merge& m) {
  switch (a.kind) {
    case AggKind::Count:
      return m.n;
    case AggKind::Sum:
      return signed_or_unsigned(a.is_signed, m.sum);
    case AggKind::Avg:
      if (m.n == 0) return std::monostate{};
      return as_double(a.is_signed, m.sum) / static_cast<double>(m.n);
    case AggKind::Min:
    case AggKind::Max:
      if (!m.has_extreme) return std::monostate{};
      return signed_or_unsigned(a.is_signed, m.extreme);
    case AggKind::Stats: {
      StatsValue s;
      s.count = m.n;
      s.sum = static_cast<int64_t>(m.sum);
      s.is_signed = a.is_signed;
      s.avg = m.n == 0 ? 0.0 : as_double(a.is_signed, m.sum) / static_cast<double>(m.n);
      return s;
    }
    case AggKind::Hist:
    case AggKind::Lhist:
    case AggKind::Percentile:
      return std::monostate{};
  }
  return std::monostate{};
}

}  // namespace

std::vector<Cell> merge_value_cells(const PlanQuery& query, std::span<const uint8_t> values,
                                    uint32_t stride, uint32_t ncpus) {
  std::vector<Merge> merges(query.aggregates.size());
  for (uint32_t cpu = 0; cpu < ncpus; ++cpu) {
    if (size_t{cpu + 1} * stride > values.size()) break;
    auto v = values.subspan(size_t{cpu} * stride, stride);
    uint64_t n = read_unsigned(v, 0, 8);
    for (size_t i = 0; i < query.aggregates.size(); ++i) {
      const auto& a = query.aggregates[i];
      Merge& m = merges[i];
      m.n += n;
      if (a.kind == AggKind::Sum || a.kind == AggKind::Avg || a.kind == AggKind::Stats)
        m.sum += read_unsigned(v, a.sum_offset, 8);
      if ((a.kind == AggKind::Min || a.kind == AggKind::Max) && n > 0) {
        uint64_t x = read_unsigned(v, a.minmax_offset, 8);
        if (!m.has_extreme || better(a, x, m.extreme)) m.extreme = x;
        m.has_extreme = true;
      }
    }
  }
  std::vector<Cell> cells;
  cells.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i)
    cells.push_back(finish(query.aggregates[i], merges[i]));
  return cells;
}

uint64_t sum_percpu_u64(std::span<const uint8_t> values, uint32_t ncpus) {
  uint64_t total = 0;
  for (uint32_t cpu = 0; cpu < ncpus; ++cpu) total += read_unsigned(values, cpu * 8, 8);
  return total;
}

namespace {

// [first, last] non-empty slots, or nothing when every slot is empty.
std::optional<std::pair<size_t, size_t>> occupied(std::span<const uint64_t> slots) {
  auto nz = [](uint64_t c) { return c != 0; };
  auto first = std::find_if(slots.begin(), slots.end(), nz);
  if (first == slots.end()) return std::nullopt;
  auto last = std::find_if(slots.rbegin(), slots.rend(), nz);
  return std::pair{static_cast<size_t>(first - slots.begin()),
                   static_cast<size_t>(slots.rend() - last - 1)};
}

// Power-of-two slot bounds (buckets.h): 0: v < 0; 1: v == 0; k+2: [2^k, 2^(k+1)).
Bucket log2_bucket(size_t slot) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (slot == 0) return {std::nullopt, 0, 0};
  if (slot == 1) return {0, 1, 0};
  int k = static_cast<int>(slot) - 2;
  Bucket b;
  b.low = k >= 63 ? kMax : int64_t{1} << k;
  if (k < 62) b.high = int64_t{1} << (k + 1);  // else the bound is past int64: open
  return b;
}

Bucket linear_bucket(int64_t min, int64_t max, int64_t step, size_t slot, size_t nslots) {
  if (slot == 0) return {std::nullopt, min, 0};
  if (slot + 1 == nslots) return {max, std::nullopt, 0};
  int64_t low = min + static_cast<int64_t>(slot - 1) * step;
  return {low, std::min(low + step, max), 0};
}

}  // namespace

Histogram log2_histogram(std::span<const uint64_t> slots) {
  Histogram h;
  auto range = occupied(slots);
  if (!range) return h;
  for (size_t s = range->first; s <= range->second; ++s) {
    Bucket b = log2_bucket(s);
    b.count = slots[s];
    h.buckets.push_back(b);
  }
  return h;
}

Histogram linear_histogram(int64_t min, int64_t max, int64_t step,
                           std::span<const uint64_t> slots) {
  Histogram h;
  auto range = occupied(slots);
  if (!range) return h;
  for (size_t s = range->first; s <= range->second; ++s) {
    Bucket b = linear_bucket(min, max, step, s, slots.size());
    b.count = slots[s];
    h.buckets.push_back(b);
  }
  return h;
}

// Each percentile is the midpoint of the log-linear bucket holding its rank (ranks count from
// 1: p50 of 10 samples is the 5th). Buckets below 16 are one wide, so small values are exact;
// above, a bucket spans 1/16 of its lower bound, which bounds the relative error. A signed
// value's map has a second half for negative values by magnitude (buckets.h), ranked first,
// the largest magnitude lowest.
PercentileValue percentiles(std::span<const double> ps, std::span<const uint64_t> slots) {
  PercentileValue out;
  const size_t n = buckets::kLogLinearSlots;
  const bool is_signed = slots.size() >= 2 * n;
  std::vector<size_t> order;  // slots from the lowest value to the highest
  if (is_signed)
    for (size_t s = 2 * n; s-- > n;) order.push_back(s);
  for (size_t s = 0; s < std::min(slots.size(), n); ++s) order.push_back(s);
  uint64_t total = 0;
  for (size_t s : order) total += slots[s];
  if (total == 0) return out;
  for (double p : ps) {
    auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total)));
    rank = std::clamp<uint64_t>(rank, 1, total);
    uint64_t cumulative = 0;
    size_t slot = order.back();
    for (size_t s : order) {
      cumulative += slots[s];
      if (cumulative >= rank) {
        slot = s;
        break;
      }
    }
    bool negative = slot >= n;
    auto r = buckets::log_linear_range(static_cast<int>(negative ? slot - n : slot));
    // A whole number inside the bucket (values are integers): no ".5" that no sample had.
    double mid = static_cast<double>(r.low + (r.high - r.low - 1) / 2);
    out.values.emplace_back(p, negative ? -mid : mid);
  }
  return out;
}

Cell histogram_cell(const PlanAggregate& agg, std::span<const uint64_t> slots) {
  switch (agg.kind) {
    case AggKind::Hist:
      return log2_histogram(slots);
    case AggKind::Lhist:
      return linear_histogram(agg.lhist_min, agg.lhist_max, agg.lhist_step, slots);
    case AggKind::Percentile: {
      PercentileValue v = percentiles(agg.percentiles, slots);
      if (v.values.empty()) return std::monostate{};
      return v;
    }
    default:
      return std::monostate{};
  }
}

StreamRow decode_event(const PlanQuery& query, std::span<const uint8_t> event,
                       const DecodeHooks& hooks) {
  StreamRow row;
  row.query = &query;
  row.ts = read_unsigned(event, 0, 8);
  int pid = record_pid(query.event_fields, event);
  row.cells.reserve(query.event_fields.size());
  // A span's end kept without its begin (unmatched: keep): its begin's values are absent.
  bool begun = !query.begun_offset || read_unsigned(event, *query.begun_offset, 1) != 0;
  for (const auto& f : query.event_fields)
    row.cells.push_back(f.from_begin && !begun
                            ? Cell{}
                            : decode_field(f, event, pid, query.probe_names, hooks));
  apply_flow(query, event, row.cells);  // report: flow: "-> " / "<- " by depth
  return row;
}

}  // namespace bpfql
