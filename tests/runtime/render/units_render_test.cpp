// Human units in tables, units named in JSON/CSV, base units in Prometheus, name functions,
// computed columns and percentiles that stay inside what was seen.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>

#include "runtime/collect/names.h"
#include "runtime/collect/collector.h"
#include "runtime/collect/decode.h"
#include "runtime/collect/output.h"
#include "runtime/render/json.h"
#include "runtime/render/prometheus.h"
#include "runtime/render/prometheus_units.h"
#include "runtime/render/units_text.h"

namespace b = bpfql;

namespace {

b::PlanQuery latency_query() {
  b::PlanQuery q;
  q.name = "lat";
  q.columns = {"comm", "total", "count()"};
  q.keys = {b::PlanField{"comm", b::ValueKind::String, 0, 16}};
  b::PlanAggregate total;
  total.name = "total";
  total.kind = b::AggKind::Sum;
  total.unit = b::Unit::nanoseconds();
  b::PlanAggregate count;
  count.name = "count()";
  q.aggregates = {total, count};
  return q;
}

}  // namespace

TEST_CASE("numbers for people: thousands separators, one decimal") {
  CHECK(b::with_thousands(uint64_t{120600}) == "120,600");
  CHECK(b::with_thousands(int64_t{-1024}) == "-1,024");
  CHECK(b::with_thousands(uint64_t{999}) == "999");
  CHECK(b::format_quantity(4.2) == "4.2");
  CHECK(b::format_quantity(13.0) == "13");
  CHECK(b::format_quantity(0.42) == "0.42");
  CHECK(b::format_quantity(12345.6) == "12,346");
}

TEST_CASE("a column's unit is the largest in which its largest value is at least 1") {
  auto ms = b::choose_shown_unit(b::Unit::nanoseconds(), 4'200'000);
  CHECK(ms.name == "ms");
  CHECK(ms.factor == doctest::Approx(1e-6));
  CHECK(b::choose_shown_unit(b::Unit::nanoseconds(), 687).name == "ns");
  CHECK(b::choose_shown_unit(b::Unit::bytes(), 13'680'640).name == "MiB");
  CHECK(b::format_quantity(13'680'640 * b::choose_shown_unit(b::Unit::bytes(), 13'680'640).factor) == "13.0");
  CHECK(b::choose_shown_unit({b::Unit::Dim::None, 1, true}, 5).name == "/s");
  CHECK(b::choose_shown_unit({}, 5).name.empty());
}

TEST_CASE("histogram bounds in the value's unit") {
  CHECK(b::format_bound(4194304, b::Unit::nanoseconds()) == "4.19ms");
  CHECK(b::format_bound(1024, b::Unit::nanoseconds()) == "1.02µs");
  CHECK(b::format_bound(512, b::Unit::nanoseconds()) == "512ns");
  CHECK(b::format_bound(4096, b::Unit::bytes()) == "4KiB");
  CHECK(b::format_bound(0, b::Unit::bytes()) == "0");
  CHECK(b::format_bound(4096, {}) == "4096");
  b::Bucket bucket{4194304, 8388608, 3};
  CHECK(b::bucket_label(bucket, true, b::Unit::nanoseconds()) == "[4.19ms, 8.39ms)");
}

TEST_CASE("a table names each column's unit in its header and shows values in it") {
  b::PlanQuery q = latency_query();
  b::IntervalResult r;
  r.query = &q;
  r.interval_s = 5;
  r.rows.push_back({{std::string("dd"), uint64_t{4'200'000}, uint64_t{120600}}});
  r.rows.push_back({{std::string("sh"), uint64_t{830'000}, uint64_t{7}}});
  std::ostringstream out;
  auto table = b::make_output(b::OutputFormat::Table, out);
  table->interval(r);
  std::string text = out.str();
  INFO(text);
  CHECK(text.find("(5s) ---") != std::string::npos);
  CHECK(text.find("comm  total (ms)  count()\n") != std::string::npos);
  CHECK(text.find("dd           4.2  120,600\n") != std::string::npos);
  CHECK(text.find("sh          0.83        7\n") != std::string::npos);
}

TEST_CASE("JSON keeps base numbers and names the units (schema 2); CSV headers name them") {
  b::PlanQuery q = latency_query();
  b::IntervalResult r;
  r.query = &q;
  r.rows.push_back({{std::string("dd"), uint64_t{4'200'000}, uint64_t{3}}});
  std::string json = b::interval_json(r).dump();
  CHECK(json.find(R"("total":4200000)") != std::string::npos);
  CHECK(json.find(R"("units":{"total":"ns"})") != std::string::npos);
  CHECK(json.find(R"("schema":2)") != std::string::npos);

  std::ostringstream out;
  auto csv = b::make_output(b::OutputFormat::Csv, out);
  csv->interval(r);
  CHECK(out.str().find("query,time,comm,total (ns),count()\n") == 0);
}

TEST_CASE("Prometheus: times in seconds, sizes in bytes") {
  CHECK(b::prometheus_unit_suffix(b::Unit::nanoseconds()) == "_seconds");
  CHECK(b::prometheus_unit_suffix(b::Unit::bytes()) == "_bytes");
  CHECK(b::prometheus_unit_suffix({}) == "");
  CHECK(b::with_unit_suffix("bpfql_q_busy", b::Unit::nanoseconds()) == "bpfql_q_busy_seconds");
  CHECK(b::with_unit_suffix("bpfql_q_read_bytes", b::Unit::bytes()) == "bpfql_q_read_bytes");
  CHECK(b::with_unit_suffix("bpfql_q_calls", {}) == "bpfql_q_calls");
  CHECK(b::prometheus_unit_scale({b::Unit::Dim::Time, 1e6, false}) == doctest::Approx(1e-3));
  auto scaled = b::prometheus_scaled(uint64_t{1'500'000'000}, b::prometheus_unit_scale(b::Unit::nanoseconds()));
  CHECK(std::get<double>(scaled) == doctest::Approx(1.5));
}

TEST_CASE("computed columns: arithmetic over a row's aggregates, empty on division by zero") {
  b::PlanComputed per_second;
  using K = b::ComputedOp::Kind;
  per_second.program = {{K::Aggregate, 0, 1}, {K::Interval, 0, -1}, {K::Div, 0, -1}};
  std::vector<b::Cell> aggs = {uint64_t{4'200'000}, uint64_t{50}};
  CHECK(std::get<double>(b::evaluate_computed(per_second, aggs, 5)) == doctest::Approx(10));
  CHECK(std::holds_alternative<std::monostate>(b::evaluate_computed(per_second, aggs, 0)));
  b::PlanComputed us;
  us.program = {{K::Aggregate, 0, 0}, {K::Constant, 1000, -1}, {K::Div, 0, -1}};
  CHECK(std::get<double>(b::evaluate_computed(us, aggs, 5)) == doctest::Approx(4200));
}

TEST_CASE("percentiles are whole numbers inside their bucket, and within min()/max()") {
  // One sample at 1000: its log-linear bucket is [992, 1024); the midpoint used to be 1007.5.
  std::vector<uint64_t> slots(b::buckets::kLogLinearSlots, 0);
  slots[b::buckets::log_linear_slot(1000)] = 1;
  std::vector<double> ps = {50, 99};
  auto p = b::percentiles(ps, slots);
  REQUIRE(p.values.size() == 2);
  CHECK(p.values[0].second == 1007);

  b::PlanQuery q;
  q.columns = {"percentile(x, 50, 99)", "max(x)"};
  b::PlanAggregate pct;
  pct.name = "percentile(x, 50, 99)";
  pct.kind = b::AggKind::Percentile;
  pct.percentiles = ps;
  pct.arg_text = "x";
  pct.map_name = "h";
  b::PlanAggregate max;
  max.name = "max(x)";
  max.kind = b::AggKind::Max;
  max.arg_text = "x";
  max.minmax_offset = 8;
  q.aggregates = {pct, max};
  q.value_map = "v";
  q.value_size = 16;
  b::QuerySnapshot snap;
  snap.values = {4, 16, 1, {}, {}};
  std::vector<uint8_t> key(4, 0), value(16, 0);
  value[0] = 1;                      // n = 1
  value[8] = 1000 & 0xff;            // max = 1000
  value[9] = (1000 >> 8) & 0xff;
  snap.values.add(key, value);
  snap.hists.resize(2);
  snap.hists[0] = {4, 8, 1, {}, {}};
  std::vector<uint8_t> slot_key(4, 0), count(8, 0);
  uint32_t slot = static_cast<uint32_t>(b::buckets::log_linear_slot(1000));
  std::memcpy(slot_key.data(), &slot, 4);
  count[0] = 1;
  snap.hists[0].add(slot_key, count);
  auto rows = b::build_rows(q, snap, {});
  REQUIRE(rows.size() == 1);
  const auto& value_cell = std::get<b::PercentileValue>(rows[0].cells[0]);
  CHECK(value_cell.values[0].second == 1000);  // not 1007: max(x) was 1000
}

TEST_CASE("name functions: every value becomes text") {
  CHECK(b::signal_text(9) == "SIGKILL");
  CHECK(b::signal_text(15) == "SIGTERM");
  CHECK(b::signal_text(35) == "SIGRTMIN+1");
  CHECK(b::signal_text(99) == "99");
  CHECK(b::tcp_state_text(1) == "ESTABLISHED");
  CHECK(b::tcp_state_text(7) == "CLOSE");
  CHECK(b::tcp_state_text(10) == "LISTEN");
  CHECK(b::open_flags_text(0) == "O_RDONLY");
  CHECK(b::open_flags_text(01 | 0100 | 01000) == "O_WRONLY|O_CREAT|O_TRUNC");
  CHECK(b::open_flags_text(02000000 | 0200000) == "O_RDONLY|O_DIRECTORY|O_CLOEXEC");
  CHECK(b::task_state_text(0) == "R");
  CHECK(b::task_state_text(1) == "S");
  CHECK(b::task_state_text(2) == "D");
  CHECK(b::task_state_text(0x100) == "R+");
  CHECK(b::ipv4_int_text(0x0100007f) == "127.0.0.1");
  CHECK(b::softirq_text(3) == "NET_RX");
  CHECK(b::capability_text(0) == "CAP_CHOWN");
  CHECK(b::capability_text(21) == "CAP_SYS_ADMIN");
  CHECK(b::capability_text(39) == "CAP_BPF");
  CHECK(b::capability_text(40) == "CAP_CHECKPOINT_RESTORE");
  CHECK(b::capability_text(41) == "41");
  CHECK(b::errno_text(-2) == "ENOENT");
  CHECK(b::errno_text(3) == "3");
  CHECK(b::symbolic_text(7, {{1, "TCP_ESTABLISHED"}, {7, "TCP_CLOSE"}}, false) == "TCP_CLOSE");
  CHECK(b::symbolic_text(9, {{1, "TCP_ESTABLISHED"}}, false) == "9");
  CHECK(b::symbolic_text(3, {{1, "S"}, {2, "D"}}, true) == "S|D");
  CHECK(b::symbolic_text(5, {{1, "S"}, {2, "D"}}, true) == "S|0x4");
  CHECK(b::cgroup_path_text(1) == "/");  // the cgroup v2 root is inode (id) 1
  CHECK(b::cgroup_path_text(uint64_t{1} << 60).rfind("cgroup:", 0) == 0);  // no such cgroup
}

TEST_CASE("Prometheus: a time aggregate is exported in seconds under a _seconds name") {
  b::Plan plan;
  b::PlanQuery q;
  q.name = "lat";
  q.columns = {"comm", "busy", "h"};
  q.keys = {b::PlanField{"comm", b::ValueKind::String, 0, 16}};
  b::PlanAggregate busy;
  busy.name = "busy";
  busy.kind = b::AggKind::Sum;
  busy.unit = b::Unit::nanoseconds();
  b::PlanAggregate h;
  h.name = "h";
  h.kind = b::AggKind::Hist;
  h.unit = b::Unit::nanoseconds();
  q.aggregates = {busy, h};
  plan.queries.push_back(q);
  b::PrometheusRenderer renderer(plan);
  b::IntervalResult r;
  r.query = &plan.queries[0];
  b::Histogram hist;
  hist.buckets.push_back(b::Bucket{1048576, 2097152, 3});
  r.rows.push_back({{std::string("dd"), uint64_t{1'500'000'000}, hist}});
  std::string text = renderer.render_query(r);
  INFO(text);
  CHECK(text.find("bpfql_lat_busy_seconds_total{comm=\"dd\"} 1.5\n") != std::string::npos);
  CHECK(text.find("bpfql_lat_h_seconds_bucket{comm=\"dd\",le=\"0.00209715") != std::string::npos);
  CHECK(text.find("# TYPE bpfql_lat_h_seconds histogram") != std::string::npos);
}
