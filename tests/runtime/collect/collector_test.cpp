// From raw per-CPU map snapshots to rows: grouping, columns, histograms by key, sort and limit.
#include "runtime/collect/collector.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "compiler/buckets.h"

using namespace bpfql;

namespace {

constexpr uint32_t kCpus = 2;

template <typename T>
void put(std::vector<uint8_t>& buf, size_t offset, T v) {
  if (buf.size() < offset + sizeof v) buf.resize(offset + sizeof v, 0);
  std::memcpy(buf.data() + offset, &v, sizeof v);
}

// Key struct { u32 pid; char comm[12]; } = 16 bytes; value struct { u64 n; u64 sum; } = 16 bytes.
std::vector<uint8_t> key(uint32_t pid, const char* comm) {
  std::vector<uint8_t> k(16, 0);
  put(k, 0, pid);
  std::memcpy(k.data() + 4, comm, std::min<size_t>(std::strlen(comm), 12));
  return k;
}

std::vector<uint8_t> values(std::initializer_list<std::pair<uint64_t, uint64_t>> per_cpu) {
  std::vector<uint8_t> v;
  size_t at = 0;
  for (auto [n, sum] : per_cpu) {
    put(v, at, n);
    put(v, at + 8, sum);
    at += 16;
  }
  return v;
}

PlanQuery keyed_query() {
  PlanQuery q;
  q.name = "q";
  q.keys = {PlanField{"pid", ValueKind::Unsigned, 0, 4, Display::None},
            PlanField{"comm", ValueKind::String, 4, 12, Display::None}};
  q.key_size = 16;
  q.value_map = "q0_values";
  q.value_size = 16;
  PlanAggregate count;
  count.name = "count()";
  count.kind = AggKind::Count;
  PlanAggregate sum;
  sum.name = "bytes";
  sum.kind = AggKind::Sum;
  sum.sum_offset = 8;
  q.aggregates = {count, sum};
  q.columns = {"comm", "count()", "pid", "bytes"};  // keys and aggregates interleaved on purpose
  return q;
}

PerCpuEntries entries(uint32_t key_size, uint32_t stride) {
  PerCpuEntries e;
  e.key_size = key_size;
  e.stride = stride;
  e.ncpus = kCpus;
  return e;
}

std::vector<uint8_t> u32_key(uint32_t i) {
  std::vector<uint8_t> k;
  put(k, 0, i);
  return k;
}

std::vector<uint8_t> u64_percpu(uint64_t a, uint64_t b) {
  std::vector<uint8_t> v;
  put(v, 0, a);
  put(v, 8, b);
  return v;
}

}  // namespace

TEST_CASE("rows follow the column order and merge CPUs per key") {
  PlanQuery q = keyed_query();
  QuerySnapshot s;
  s.values = entries(16, 16);
  s.values.add(key(10, "nginx"), values({{3, 300}, {1, 100}}));
  s.values.add(key(20, "bash"), values({{0, 0}, {2, 7}}));
  auto rows = build_rows(q, s, {});
  sort_and_limit(q, rows);
  REQUIRE(rows.size() == 2);
  CHECK(std::get<std::string>(rows[0].cells[0]) == "nginx");
  CHECK(std::get<uint64_t>(rows[0].cells[1]) == 4);
  CHECK(std::get<uint64_t>(rows[0].cells[2]) == 10);
  CHECK(std::get<uint64_t>(rows[0].cells[3]) == 400);
  CHECK(std::get<std::string>(rows[1].cells[0]) == "bash");
  CHECK(std::get<uint64_t>(rows[1].cells[1]) == 2);
}

TEST_CASE("default order: first aggregate descending; ties by key ascending; then limit") {
  PlanQuery q = keyed_query();
  q.limit = 3;
  QuerySnapshot s;
  s.values = entries(16, 16);
  s.values.add(key(4, "d"), values({{1, 0}, {0, 0}}));
  s.values.add(key(3, "c"), values({{5, 0}, {0, 0}}));
  s.values.add(key(2, "b"), values({{2, 0}, {3, 0}}));
  s.values.add(key(1, "a"), values({{9, 0}, {0, 0}}));
  auto rows = build_rows(q, s, {});
  sort_and_limit(q, rows);
  REQUIRE(rows.size() == 3);
  CHECK(std::get<std::string>(rows[0].cells[0]) == "a");
  // "b" and "c" both count 5: the key (pid 2 before 3 by the first key column, comm) decides.
  CHECK(std::get<std::string>(rows[1].cells[0]) == "b");
  CHECK(std::get<std::string>(rows[2].cells[0]) == "c");
}

TEST_CASE("order_by a named column, ascending") {
  PlanQuery q = keyed_query();
  q.order_by = "bytes";
  q.descending = false;
  QuerySnapshot s;
  s.values = entries(16, 16);
  s.values.add(key(1, "a"), values({{1, 50}, {0, 0}}));
  s.values.add(key(2, "b"), values({{1, 10}, {0, 0}}));
  s.values.add(key(3, "c"), values({{1, 30}, {0, 0}}));
  auto rows = build_rows(q, s, {});
  sort_and_limit(q, rows);
  CHECK(std::get<uint64_t>(rows[0].cells[3]) == 10);
  CHECK(std::get<uint64_t>(rows[1].cells[3]) == 30);
  CHECK(std::get<uint64_t>(rows[2].cells[3]) == 50);
}

TEST_CASE("a keyless query always has one row, even with no events") {
  PlanQuery q;
  q.value_map = "q0_values";
  q.value_size = 16;
  PlanAggregate count;
  count.name = "count()";
  q.aggregates = {count};
  q.columns = {"count()"};

  QuerySnapshot empty;
  auto rows = build_rows(q, empty, {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[0]) == 0);

  QuerySnapshot s;
  s.values = entries(4, 16);
  s.values.add(u32_key(0), values({{6, 0}, {1, 0}}));
  rows = build_rows(q, s, {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[0]) == 7);
}

TEST_CASE("keyed histograms group slots by the key bytes before the slot") {
  PlanQuery q;
  q.keys = {PlanField{"pid", ValueKind::Unsigned, 0, 4, Display::None}};
  q.key_size = 8;
  PlanAggregate h;
  h.name = "hist(size)";
  h.kind = AggKind::Hist;
  h.map_name = "q0_hist0";
  q.aggregates = {h};
  q.columns = {"pid", "hist(size)"};

  QuerySnapshot s;
  s.hists.resize(1);
  s.hists[0] = entries(16, 8);
  auto hist_key = [](uint32_t pid, uint64_t slot) {
    std::vector<uint8_t> k(16, 0);
    put(k, 0, pid);
    put(k, 8, slot);
    return k;
  };
  s.hists[0].add(hist_key(1, 3), u64_percpu(1, 1));    // pid 1: [2,4) x2
  s.hists[0].add(hist_key(2, 5), u64_percpu(10, 0));   // pid 2: [8,16) x10
  s.hists[0].add(hist_key(1, 5), u64_percpu(0, 1));    // pid 1: [8,16) x1
  s.hists[0].add(hist_key(2, 999), u64_percpu(1, 0));  // out of range: ignored
  auto rows = build_rows(q, s, {});
  sort_and_limit(q, rows);  // by total count: pid 2 (10) before pid 1 (3)
  REQUIRE(rows.size() == 2);
  CHECK(std::get<uint64_t>(rows[0].cells[0]) == 2);
  auto h2 = std::get<Histogram>(rows[0].cells[1]);
  REQUIRE(h2.buckets.size() == 1);
  CHECK(h2.buckets[0].count == 10);
  auto h1 = std::get<Histogram>(rows[1].cells[1]);
  REQUIRE(h1.buckets.size() == 3);  // [2,4) [4,8) [8,16)
  CHECK(h1.buckets[0].count == 2);
  CHECK(h1.buckets[1].count == 0);
  CHECK(h1.buckets[2].count == 1);
}

TEST_CASE("keyless percentile: an array indexed by slot, next to a count from the value map") {
  PlanQuery q;
  q.value_map = "q0_values";
  q.value_size = 8;
  PlanAggregate count;
  count.name = "count()";
  PlanAggregate p;
  p.name = "percentile(lat)";
  p.kind = AggKind::Percentile;
  p.map_name = "q0_pct1";
  p.percentiles = {50, 99};
  q.aggregates = {count, p};
  q.columns = {"count()", "percentile(lat)"};

  QuerySnapshot s;
  s.values = entries(4, 8);
  s.values.add(u32_key(0), u64_percpu(60, 40));
  s.hists.resize(2);
  s.hists[1] = entries(4, 8);
  for (int slot = 0; slot < buckets::kLogLinearSlots; ++slot) {
    uint64_t a = slot == buckets::log_linear_slot(1000) ? 90 : 0;
    uint64_t b = slot == buckets::log_linear_slot(50000) ? 10 : 0;
    s.hists[1].add(u32_key(slot), u64_percpu(a, b));
  }
  auto rows = build_rows(q, s, {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[0]) == 100);
  auto pv = std::get<PercentileValue>(rows[0].cells[1]);
  REQUIRE(pv.values.size() == 2);
  CHECK(std::abs(pv.values[0].second - 1000) <= 1000.0 / 16);
  CHECK(std::abs(pv.values[1].second - 50000) <= 50000.0 / 16);
}

TEST_CASE("display hooks reach key columns; stacks reach the symbolizer") {
  PlanQuery q;
  q.keys = {PlanField{"syscall", ValueKind::Signed, 0, 8, Display::Syscall},
            PlanField{"kstack", ValueKind::KernelStack, 8, 4, Display::None}};
  q.key_size = 16;
  q.value_map = "v";
  q.value_size = 8;
  PlanAggregate count;
  count.name = "count()";
  q.aggregates = {count};
  q.columns = {"syscall", "kstack", "count()"};
  QuerySnapshot s;
  s.values = entries(16, 8);
  std::vector<uint8_t> k(16, 0);
  put<int64_t>(k, 0, 39);
  put<int32_t>(k, 8, 5);
  s.values.add(k, u64_percpu(1, 0));
  DecodeHooks hooks;
  hooks.display = [](Display d, const Cell& raw, int, std::span<const std::string>) -> Cell {
    CHECK(d == Display::Syscall);
    return std::get<int64_t>(raw) == 39 ? Cell{std::string("getpid")} : raw;
  };
  hooks.stacks = [](ValueKind, int32_t id, int) {
    return StackValue{{"frame" + std::to_string(id)}};
  };
  auto rows = build_rows(q, s, hooks);
  REQUIRE(rows.size() == 1);
  CHECK(std::get<std::string>(rows[0].cells[0]) == "getpid");
  CHECK(std::get<StackValue>(rows[0].cells[1]).frames == std::vector<std::string>{"frame5"});
}

TEST_CASE("compare_cells orders histograms by total count and kinds consistently") {
  Histogram small{{Bucket{0, 1, 2}}};
  Histogram big{{Bucket{0, 1, 1}, Bucket{1, 2, 5}}};
  CHECK(compare_cells(small, big) < 0);
  CHECK(compare_cells(Cell{uint64_t{3}}, Cell{uint64_t{3}}) == 0);
  CHECK(compare_cells(Cell{int64_t{-3}}, Cell{int64_t{2}}) < 0);
  CHECK(compare_cells(Cell{}, Cell{uint64_t{0}}) < 0);
  CHECK(compare_cells(Cell{std::string("b")}, Cell{std::string("a")}) > 0);
  // Byte arrays byte by byte, as addresses sort: 10.0.0.9 before 10.0.0.10.
  CHECK(compare_cells(Cell{BytesValue{{10, 0, 0, 9}}}, Cell{BytesValue{{10, 0, 0, 10}}}) < 0);
  CHECK(compare_cells(Cell{BytesValue{{10, 0, 0, 9}}}, Cell{BytesValue{{10, 0, 0, 9}}}) == 0);
  CHECK(compare_cells(Cell{BytesValue{{11}}}, Cell{BytesValue{{10, 255}}}) > 0);
}

TEST_CASE("a limit over many keys picks the same rows in the same order as sorting them all") {
  // Many ties (counts 0..6) so that the key columns decide most places; several orders.
  for (const char* order_by : {"", "bytes", "pid", "comm"}) {
    for (bool descending : {true, false}) {
      CAPTURE(order_by);
      CAPTURE(descending);
      PlanQuery q = keyed_query();
      q.order_by = order_by;
      q.descending = descending;
      QuerySnapshot s;
      s.values = entries(16, 16);
      for (uint32_t i = 0; i < 500; ++i) {
        std::string comm = "c" + std::to_string((i * 7919) % 13);
        s.values.add(key((i * 104729) % 1000, comm.c_str()), values({{i % 7, i % 5}, {0, i % 3}}));
      }
      PlanQuery all = q;
      auto every = build_rows(all, s, {});
      sort_and_limit(all, every);
      q.limit = 17;
      auto top = build_rows(q, s, {});  // 500 > 2 × 17: only the order columns are decoded for all
      CHECK(top.size() == 17);
      sort_and_limit(q, top);
      REQUIRE(top.size() == 17);
      for (size_t r = 0; r < top.size(); ++r)
        for (size_t c = 0; c < q.columns.size(); ++c) CHECK(compare_cells(top[r].cells[c], every[r].cells[c]) == 0);
    }
  }
}
