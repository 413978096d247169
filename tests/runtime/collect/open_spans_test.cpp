// report: open: open spans (key -> begin time and captures) become the rows their keys and
// aggregates name, through the same build_rows as every other query: counts, sums, min/max,
// age against the print time, histogram slots as the program's helpers would give them.
#include "runtime/collect/open_spans.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace bpfql;

namespace {

template <typename T>
void put(std::vector<uint8_t>& buf, size_t offset, T v) {
  if (buf.size() < offset + sizeof v) buf.resize(offset + sizeof v, 0);
  std::memcpy(buf.data() + offset, &v, sizeof v);
}

// Span value { u64 ts; s64 size; u32 site; u32 pad; } = 24 bytes, keyed by a u64 address.
PerCpuEntries spans(std::initializer_list<std::tuple<uint64_t, int64_t, uint32_t>> open) {
  PerCpuEntries e{8, 24, 1, {}, {}};
  uint64_t address = 0x1000;
  for (auto [ts, size, site] : open) {
    std::vector<uint8_t> k, v(24, 0);
    put(k, 0, address += 0x10);
    put(v, 0, ts);
    put(v, 8, size);
    put(v, 16, site);
    e.add(k, v);
  }
  return e;
}

SpanValueSource field(uint32_t offset, uint32_t size, bool is_signed = false) {
  return {SpanValueSource::Kind::Field, offset, size, is_signed};
}

// group_by begin.site; count(), sum(begin.size), min(begin.size), max(age), hist(begin.size).
// Key struct { u32 site; u32 pad; }; value struct { u64 n; s64 sum; s64 min; u64 max; }.
PlanQuery by_site() {
  PlanQuery q;
  q.name = "open";
  q.report_open = true;
  q.keys = {PlanField{"site", ValueKind::Unsigned, 0, 4, Display::None}};
  q.key_size = 8;
  q.value_size = 32;
  q.open_keys = {field(16, 4)};
  PlanAggregate count{.name = "blocks", .kind = AggKind::Count};
  PlanAggregate sum{.name = "bytes", .kind = AggKind::Sum, .is_signed = true, .sum_offset = 8};
  PlanAggregate min{.name = "smallest", .kind = AggKind::Min, .is_signed = true, .minmax_offset = 16};
  PlanAggregate oldest{.name = "oldest", .kind = AggKind::Max, .minmax_offset = 24};
  PlanAggregate sizes{.name = "sizes", .kind = AggKind::Hist, .is_signed = true};
  q.aggregates = {count, sum, min, oldest, sizes};
  q.open_args = {{}, field(8, 8, true), field(8, 8, true), {SpanValueSource::Kind::Age}, field(8, 8, true)};
  q.columns = {"site", "blocks", "bytes", "smallest", "oldest", "sizes"};
  return q;
}

const ResultRow& row_of(const std::vector<ResultRow>& rows, uint64_t site) {
  for (const auto& r : rows)
    if (std::get<uint64_t>(r.cells[0]) == site) return r;
  FAIL("no row for site " << site);
  return rows.front();
}

}  // namespace

TEST_CASE("open spans: grouped by a capture, counted, summed, aged at the print time") {
  PlanQuery q = by_site();
  QuerySnapshot s = open_span_snapshot(
      q, spans({{100, 64, 1}, {250, 4096, 1}, {400, -3, 2}, {900, 64, 1}}), 1000);
  std::vector<ResultRow> rows = build_rows(q, s, {});
  REQUIRE(rows.size() == 2);
  const ResultRow& one = row_of(rows, 1);
  CHECK(std::get<uint64_t>(one.cells[1]) == 3);
  CHECK(std::get<int64_t>(one.cells[2]) == 64 + 4096 + 64);
  CHECK(std::get<int64_t>(one.cells[3]) == 64);
  CHECK(std::get<uint64_t>(one.cells[4]) == 900);  // the oldest began at 100
  const auto& hist = std::get<Histogram>(one.cells[5]);
  REQUIRE(hist.buckets.size() >= 2);
  CHECK(hist.buckets.front().low == 64);
  CHECK(hist.buckets.front().count == 2);
  CHECK(hist.buckets.back().low == 4096);
  CHECK(hist.buckets.back().count == 1);
  const ResultRow& two = row_of(rows, 2);
  CHECK(std::get<uint64_t>(two.cells[1]) == 1);
  CHECK(std::get<int64_t>(two.cells[2]) == -3);  // a signed capture stays signed
  CHECK(std::get<int64_t>(two.cells[3]) == -3);
  CHECK(std::get<uint64_t>(two.cells[4]) == 600);
}

TEST_CASE("open spans: none open is no row; a keyless query has its one row, at zero") {
  PlanQuery q = by_site();
  CHECK(build_rows(q, open_span_snapshot(q, spans({}), 1000), {}).empty());
  PlanQuery keyless = by_site();
  keyless.keys.clear();
  keyless.open_keys.clear();
  keyless.key_size = 0;
  keyless.columns = {"blocks", "bytes", "smallest", "oldest", "sizes"};
  auto none = build_rows(keyless, open_span_snapshot(keyless, spans({}), 1000), {});
  REQUIRE(none.size() == 1);
  CHECK(std::get<uint64_t>(none[0].cells[0]) == 0);
  auto two = build_rows(keyless, open_span_snapshot(keyless, spans({{10, 8, 1}, {20, 8, 2}}), 30), {});
  REQUIRE(two.size() == 1);
  CHECK(std::get<uint64_t>(two[0].cells[0]) == 2);
  CHECK(std::get<int64_t>(two[0].cells[1]) == 16);
  CHECK(std::get<uint64_t>(two[0].cells[3]) == 20);
  CHECK(std::get<Histogram>(two[0].cells[4]).buckets.front().count == 2);
}

TEST_CASE("open spans: a span read twice (a get_next_key walk that restarted) counts once") {
  PlanQuery q = by_site();
  PerCpuEntries twice = spans({{100, 8, 1}, {200, 8, 1}});
  PerCpuEntries again = spans({{100, 8, 1}});  // the first key again
  twice.add(again.key(0), again.value(0));
  auto rows = build_rows(q, open_span_snapshot(q, twice, 1000), {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[1]) == 2);
}

TEST_CASE("open spans: a begin after the print time has age 0, not a wrapped one") {
  PlanQuery q = by_site();
  auto rows = build_rows(q, open_span_snapshot(q, spans({{2000, 1, 1}}), 1000), {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[4]) == 0);
}
