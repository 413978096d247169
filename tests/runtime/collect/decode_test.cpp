// Decoding Plan-described bytes: key/event fields, per-CPU merges, histogram slots, percentiles.
#include "runtime/collect/decode.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/buckets.h"
#include "runtime/collect/byte_text.h"
#include "runtime/collect/display.h"

using namespace bpfql;

namespace {

// Writes native-endian integers and char arrays at given offsets into a zeroed buffer.
struct Bytes {
  std::vector<uint8_t> data;
  explicit Bytes(size_t n) : data(n, 0) {}
  template <typename T>
  Bytes& put(size_t offset, T v) {
    std::memcpy(data.data() + offset, &v, sizeof v);
    return *this;
  }
  Bytes& str(size_t offset, const char* s, size_t n) {
    std::memcpy(data.data() + offset, s, std::min(n, std::strlen(s)));
    return *this;
  }
};

PlanField field(const char* name, ValueKind kind, uint32_t offset, uint32_t size,
                Display d = Display::None) {
  return PlanField{name, kind, offset, size, d};
}

PlanAggregate agg(const char* name, AggKind kind, bool is_signed, uint32_t sum_off = 0,
                  uint32_t minmax_off = 0) {
  PlanAggregate a;
  a.name = name;
  a.kind = kind;
  a.is_signed = is_signed;
  a.sum_offset = sum_off;
  a.minmax_offset = minmax_off;
  return a;
}

// The value struct the tests use: { u64 n; s64 sum; s64 min; u64 max; } (32 bytes) per CPU.
std::vector<uint8_t> percpu(const std::vector<std::array<uint64_t, 4>>& cpus) {
  std::vector<uint8_t> out;
  for (const auto& c : cpus) {
    Bytes b(32);
    for (int i = 0; i < 4; ++i) b.put<uint64_t>(i * 8, c[i]);
    out.insert(out.end(), b.data.begin(), b.data.end());
  }
  return out;
}

// hist() slot of v, as buckets.h defines it.
int hist_slot(int64_t v) {
  if (v < 0) return 0;
  if (v == 0) return 1;
  return 2 + (63 - __builtin_clzll(static_cast<uint64_t>(v)));
}

}  // namespace

TEST_CASE("key fields decode by kind, size and offset") {
  Bytes key(40);
  key.put<uint32_t>(0, 4242).str(4, "nginx", 16).put<int16_t>(20, -7).put<uint8_t>(22, 1);
  key.put<uint64_t>(24, 0xffffffffffffffffULL).put<int8_t>(32, -1);
  DecodeHooks hooks;

  CHECK(std::get<uint64_t>(decode_field(field("pid", ValueKind::Unsigned, 0, 4), key.data, -1, {},
                                        hooks)) == 4242);
  CHECK(std::get<std::string>(decode_field(field("comm", ValueKind::String, 4, 16), key.data, -1,
                                           {}, hooks)) == "nginx");
  CHECK(std::get<int64_t>(
            decode_field(field("x", ValueKind::Signed, 20, 2), key.data, -1, {}, hooks)) == -7);
  CHECK(std::get<bool>(decode_field(field("f", ValueKind::Bool, 22, 1), key.data, -1, {}, hooks)) ==
        true);
  CHECK(std::get<uint64_t>(decode_field(field("u", ValueKind::Unsigned, 24, 8), key.data, -1, {},
                                        hooks)) == UINT64_MAX);
  CHECK(std::get<int64_t>(
            decode_field(field("s", ValueKind::Signed, 24, 8), key.data, -1, {}, hooks)) == -1);
  CHECK(std::get<int64_t>(
            decode_field(field("b", ValueKind::Signed, 32, 1), key.data, -1, {}, hooks)) == -1);
}

TEST_CASE("a string that fills its array has no NUL and stops at the array's end") {
  Bytes key(24);
  key.str(0, "0123456789abcdefXYZ", 16).put<uint64_t>(16, 99);
  auto cell = decode_field(field("comm", ValueKind::String, 0, 16), key.data, -1, {}, {});
  CHECK(std::get<std::string>(cell) == "0123456789abcdef");
}

TEST_CASE("display functions apply only to fields that name one, with the record's pid") {
  Bytes key(16);
  key.put<uint32_t>(0, 77).put<uint32_t>(4, 1).put<uint64_t>(8, 0x1234);
  std::vector<PlanField> keys = {field("pid", ValueKind::Unsigned, 0, 4),
                                 field("probe", ValueKind::Unsigned, 4, 4, Display::Probe),
                                 field("usym", ValueKind::Unsigned, 8, 8, Display::Usym)};
  std::vector<std::string> probes = {"tracepoint:a:b", "tracepoint:c:d"};
  int seen_pid = 0;
  DecodeHooks hooks;
  hooks.display = [&](Display d, const Cell& raw, int pid,
                      std::span<const std::string> names) -> Cell {
    seen_pid = pid;
    if (d == Display::Probe) return names[std::get<uint64_t>(raw)];
    return std::string("sym@") + std::to_string(std::get<uint64_t>(raw));
  };
  int pid = record_pid(keys, key.data);
  CHECK(pid == 77);
  CHECK(std::get<uint64_t>(decode_field(keys[0], key.data, pid, probes, hooks)) == 77);
  CHECK(std::get<std::string>(decode_field(keys[1], key.data, pid, probes, hooks)) ==
        "tracepoint:c:d");
  CHECK(std::get<std::string>(decode_field(keys[2], key.data, pid, probes, hooks)) == "sym@4660");
  CHECK(seen_pid == 77);
}

TEST_CASE("stack fields go through the symbolizer with their id, kind and pid") {
  Bytes ev(24);
  ev.put<uint64_t>(0, 5).put<uint32_t>(8, 31).put<int32_t>(12, 9);
  std::vector<PlanField> fields = {field("pid", ValueKind::Unsigned, 8, 4),
                                   field("ustack", ValueKind::UserStack, 12, 4)};
  DecodeHooks hooks;
  hooks.stacks = [](ValueKind k, int32_t id, int pid) {
    return StackValue{{std::to_string(static_cast<int>(k)) + ":" + std::to_string(id) + ":" +
                       std::to_string(pid)}};
  };
  auto cell = decode_field(fields[1], ev.data, record_pid(fields, ev.data), {}, hooks);
  REQUIRE(std::holds_alternative<StackValue>(cell));
  CHECK(std::get<StackValue>(cell).frames.at(0) ==
        std::to_string(static_cast<int>(ValueKind::UserStack)) + ":9:31");
}

TEST_CASE("a stack held as addresses goes to the frame symbolizer, up to the first 0") {
  Bytes ev(16 + 4 * 8);
  ev.put<uint32_t>(8, 77).put<uint64_t>(16, 0xa1).put<uint64_t>(24, 0xb2).put<uint64_t>(40, 0xdead);
  std::vector<PlanField> fields = {field("pid", ValueKind::Unsigned, 8, 4),
                                   field("kstack", ValueKind::KernelStack, 16, 32)};
  DecodeHooks hooks;
  hooks.stacks = [](ValueKind, int32_t, int) { return StackValue{{"by id"}}; };
  hooks.frames = [](ValueKind k, std::span<const uint64_t> addresses, int pid) {
    StackValue out;
    for (uint64_t a : addresses)
      out.frames.push_back(fmt::format("{}:{:x}:{}", static_cast<int>(k), a, pid));
    return out;
  };
  auto cell = decode_field(fields[1], ev.data, record_pid(fields, ev.data), {}, hooks);
  REQUIRE(std::holds_alternative<StackValue>(cell));
  std::string k = std::to_string(static_cast<int>(ValueKind::KernelStack));
  // 0xdead comes after the terminating 0: not part of the stack.
  CHECK(std::get<StackValue>(cell).frames ==
        std::vector<std::string>{k + ":a1:77", k + ":b2:77"});
  hooks.frames = nullptr;
  CHECK(std::get<StackValue>(decode_field(fields[1], ev.data, 77, {}, hooks)).frames.empty());
}

TEST_CASE("per-CPU values: counts and sums add, min/max skip CPUs that saw nothing") {
  PlanQuery q;
  q.aggregates = {
      agg("count()", AggKind::Count, false),    agg("sum(x)", AggKind::Sum, true, 8),
      agg("min(x)", AggKind::Min, true, 0, 16), agg("max(y)", AggKind::Max, false, 0, 24),
      agg("avg(x)", AggKind::Avg, true, 8),     agg("stats(x)", AggKind::Stats, true, 8)};
  // CPU 1 saw nothing but holds stale min/max bytes that must not win.
  auto values = percpu({{2, static_cast<uint64_t>(-10), static_cast<uint64_t>(-6), 5},
                        {0, 0, static_cast<uint64_t>(-1000), 1000},
                        {3, 4, static_cast<uint64_t>(-2), 9}});
  auto cells = merge_value_cells(q, values, 32, 3);
  CHECK(std::get<uint64_t>(cells[0]) == 5);
  CHECK(std::get<int64_t>(cells[1]) == -6);
  CHECK(std::get<int64_t>(cells[2]) == -6);
  CHECK(std::get<uint64_t>(cells[3]) == 9);
  CHECK(std::get<double>(cells[4]) == doctest::Approx(-6.0 / 5));
  auto stats = std::get<StatsValue>(cells[5]);
  CHECK(stats.count == 5);
  CHECK(stats.sum == -6);
  CHECK(stats.avg == doctest::Approx(-1.2));
  CHECK(stats.is_signed);
}

TEST_CASE("min/max of unsigned values compare unsigned; no events leave them empty") {
  PlanQuery q;
  q.aggregates = {agg("min(y)", AggKind::Min, false, 0, 24), agg("avg(y)", AggKind::Avg, false, 8)};
  auto values = percpu({{1, 0, 0, 1ULL << 63}, {1, 0, 0, 3}});
  auto cells = merge_value_cells(q, values, 32, 2);
  CHECK(std::get<uint64_t>(cells[0]) == 3);

  auto empty = percpu({{0, 0, 0, 7}, {0, 0, 0, 8}});
  auto none = merge_value_cells(q, empty, 32, 2);
  CHECK(std::holds_alternative<std::monostate>(none[0]));
  CHECK(std::holds_alternative<std::monostate>(none[1]));
}

TEST_CASE("per-CPU stride is the value size rounded up to 8") {
  CHECK(percpu_stride(8) == 8);
  CHECK(percpu_stride(12) == 16);
  CHECK(percpu_stride(17) == 24);
  Bytes two(16);
  two.put<uint64_t>(0, 40).put<uint64_t>(8, 2);
  CHECK(sum_percpu_u64(two.data, 2) == 42);
}

TEST_CASE("hist: slots become power-of-two buckets, trimmed at both ends, gaps kept") {
  std::vector<uint64_t> slots(buckets::kHistSlots, 0);
  for (int64_t v : {0, 1, 1, 9, 12, 15, -3}) slots[hist_slot(v)]++;
  auto h = log2_histogram(slots);
  REQUIRE(h.buckets.size() == 6);  // (-inf,0) [0,1) [1,2) [2,4) [4,8) [8,16)
  CHECK(!h.buckets[0].low.has_value());
  CHECK(h.buckets[0].high == 0);
  CHECK(h.buckets[0].count == 1);
  CHECK(h.buckets[1].low == 0);
  CHECK(h.buckets[1].high == 1);
  CHECK(h.buckets[2].count == 2);
  CHECK(h.buckets[3].low == 2);
  CHECK(h.buckets[3].count == 0);  // a gap inside the range stays, as bpftrace prints it
  CHECK(h.buckets[4].count == 0);
  CHECK(h.buckets[5].low == 8);
  CHECK(h.buckets[5].high == 16);
  CHECK(h.buckets[5].count == 3);

  CHECK(log2_histogram(std::vector<uint64_t>(buckets::kHistSlots, 0)).buckets.empty());
}

TEST_CASE("hist: the top slots have open upper bounds instead of overflowing") {
  std::vector<uint64_t> slots(buckets::kHistSlots, 0);
  slots[2 + 62] = 1;  // [2^62, 2^63)
  auto h = log2_histogram(slots);
  REQUIRE(h.buckets.size() == 1);
  CHECK(h.buckets[0].low == int64_t{1} << 62);
  CHECK(!h.buckets[0].high.has_value());
}

TEST_CASE("lhist: below-min, linear and at-or-above-max slots") {
  int n = buckets::lhist_slots(0, 100, 10);
  REQUIRE(n == 12);
  std::vector<uint64_t> slots(n, 0);
  slots[0] = 1;      // v < 0
  slots[1 + 1] = 4;  // [10, 20)
  slots[n - 1] = 2;  // v >= 100
  auto h = linear_histogram(0, 100, 10, slots);
  REQUIRE(h.buckets.size() == 12);
  CHECK(!h.buckets[0].low.has_value());
  CHECK(h.buckets[0].high == 0);
  CHECK(h.buckets[2].low == 10);
  CHECK(h.buckets[2].high == 20);
  CHECK(h.buckets[2].count == 4);
  CHECK(h.buckets[10].low == 90);
  CHECK(h.buckets[10].high == 100);
  CHECK(h.buckets[11].low == 100);
  CHECK(!h.buckets[11].high.has_value());
  CHECK(h.buckets[11].count == 2);
}

TEST_CASE("lhist: a last linear bucket shorter than the step ends at max") {
  int n = buckets::lhist_slots(0, 25, 10);
  REQUIRE(n == 5);
  std::vector<uint64_t> slots(n, 0);
  slots[3] = 1;
  auto h = linear_histogram(0, 25, 10, slots);
  REQUIRE(h.buckets.size() == 1);
  CHECK(h.buckets[0].low == 20);
  CHECK(h.buckets[0].high == 25);
}

TEST_CASE("percentiles from a uniform distribution are within 1/16") {
  std::vector<uint64_t> slots(buckets::kLogLinearSlots, 0);
  for (uint64_t v = 1; v <= 10000; ++v) slots[buckets::log_linear_slot(v)]++;
  std::vector<double> ps = {50, 90, 99, 100};
  auto p = percentiles(ps, slots);
  REQUIRE(p.values.size() == 4);
  CHECK(p.max_relative_error == doctest::Approx(1.0 / 16));
  const double expected[] = {5000, 9000, 9900, 10000};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(p.values[i].first == ps[i]);
    CHECK(std::abs(p.values[i].second - expected[i]) <= expected[i] / 16);
  }
}

TEST_CASE("percentiles of small values are exact; no samples give no cell") {
  std::vector<uint64_t> slots(buckets::kLogLinearSlots, 0);
  for (uint64_t v : {1, 2, 3, 3, 7}) slots[buckets::log_linear_slot(v)]++;
  std::vector<double> ps = {50, 100};
  auto p = percentiles(ps, slots);
  CHECK(p.values[0].second == 3);
  CHECK(p.values[1].second == 7);

  PlanAggregate a = agg("percentile(x)", AggKind::Percentile, false);
  a.percentiles = {50};
  CHECK(std::holds_alternative<std::monostate>(
      histogram_cell(a, std::vector<uint64_t>(buckets::kLogLinearSlots, 0))));
  CHECK(std::holds_alternative<PercentileValue>(histogram_cell(a, slots)));
}

TEST_CASE("percentiles of a signed value rank its negative values first") {
  // A signed value's map has a second half for negatives, by magnitude (buckets.h).
  std::vector<uint64_t> slots(static_cast<size_t>(buckets::percentile_slots(true)), 0);
  for (int64_t v : {-100, -100, -100, -2, -2, 5, 5, 5, 5, 5}) slots[buckets::log_linear_slot_signed(v)]++;
  std::vector<double> ps = {10, 30, 50, 60, 100};
  auto p = percentiles(ps, slots);
  REQUIRE(p.values.size() == 5);
  CHECK(std::abs(p.values[0].second - -100) <= 100.0 / 16);  // rank 1: the most negative
  CHECK(std::abs(p.values[1].second - -100) <= 100.0 / 16);  // rank 3
  CHECK(p.values[2].second == -2);                           // rank 5
  CHECK(p.values[3].second == 5);                            // rank 6
  CHECK(p.values[4].second == 5);
  CHECK(buckets::log_linear_slot_signed(-1) == buckets::kLogLinearSlots + 1);
  CHECK(buckets::log_linear_slot_signed(INT64_MIN) ==
        buckets::kLogLinearSlots + buckets::log_linear_slot(uint64_t{1} << 63));
}

TEST_CASE("percentile of a heavy-tailed distribution: p99 lands in the tail") {
  std::vector<uint64_t> slots(buckets::kLogLinearSlots, 0);
  slots[buckets::log_linear_slot(100)] += 980;
  slots[buckets::log_linear_slot(1'000'000)] += 20;
  std::vector<double> ps = {50, 99};
  auto p = percentiles(ps, slots);
  CHECK(std::abs(p.values[0].second - 100) <= 100.0 / 16);
  CHECK(std::abs(p.values[1].second - 1e6) <= 1e6 / 16);
}

TEST_CASE("events: ts at offset 0, then the event fields in order") {
  PlanQuery q;
  q.event_fields = {field("pid", ValueKind::Unsigned, 8, 4),
                    field("comm", ValueKind::String, 12, 16),
                    field("ret", ValueKind::Signed, 32, 8)};
  Bytes ev(40);
  ev.put<uint64_t>(0, 123456789).put<uint32_t>(8, 42).str(12, "sh", 16).put<int64_t>(32, -2);
  auto row = decode_event(q, ev.data, {});
  CHECK(row.query == &q);
  CHECK(row.ts == 123456789);
  REQUIRE(row.cells.size() == 3);
  CHECK(std::get<uint64_t>(row.cells[0]) == 42);
  CHECK(std::get<std::string>(row.cells[1]) == "sh");
  CHECK(std::get<int64_t>(row.cells[2]) == -2);
}

TEST_CASE("a short record decodes missing fields as zero instead of reading past it") {
  Bytes ev(4);
  ev.put<uint32_t>(0, 1);
  CHECK(read_unsigned(ev.data, 0, 8) == 0);
  CHECK(read_unsigned(ev.data, 0, 4) == 1);
  CHECK(
      std::get<std::string>(decode_field(field("s", ValueKind::String, 2, 16), ev.data, -1, {}, {}))
          .size() <= 2);
}

TEST_CASE("byte arrays: their bytes as they are (NULs included), addresses where displayed") {
  PlanQuery q;
  q.event_fields = {field("args.saddr", ValueKind::Bytes, 8, 4, Display::Ipv4),
                    field("args.daddr_v6", ValueKind::Bytes, 12, 16, Display::Ipv6),
                    field("args.uuid", ValueKind::Bytes, 28, 3)};
  Bytes ev(32);
  const uint8_t v4[] = {127, 0, 0, 1};
  const uint8_t v6[] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t id[] = {0x0a, 0x00, 0x2c};
  std::memcpy(ev.data.data() + 8, v4, 4);
  std::memcpy(ev.data.data() + 12, v6, 16);
  std::memcpy(ev.data.data() + 28, id, 3);

  auto raw = decode_event(q, ev.data, {});  // no display hook: the bytes themselves
  CHECK(std::get<BytesValue>(raw.cells[0]).bytes == std::vector<uint8_t>{127, 0, 0, 1});
  CHECK(std::get<BytesValue>(raw.cells[1]).bytes.size() == 16);
  CHECK(std::get<BytesValue>(raw.cells[2]).bytes == std::vector<uint8_t>{0x0a, 0x00, 0x2c});

  DecodeHooks hooks;
  hooks.display = apply_display;
  auto shown = decode_event(q, ev.data, hooks);
  auto text = [&](size_t i) { return bytes_text(std::get<BytesValue>(shown.cells[i])); };
  CHECK(text(0) == "127.0.0.1");
  CHECK(text(1) == "fe80::1");
  CHECK(text(2) == "0a002c");

  // A field past the end of a short record holds what there is, never more.
  auto cut = decode_field(field("x", ValueKind::Bytes, 30, 4), ev.data, -1, {}, {});
  CHECK(std::get<BytesValue>(cut).bytes == std::vector<uint8_t>{0x2c, 0x00});
}
