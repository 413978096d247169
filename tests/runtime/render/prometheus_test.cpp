// Prometheus exposition for `bpfql serve`, from hand-built results: metric and label names,
// escaping, counter/gauge types, histogram cumulativity and le bounds, stats, percentile buckets
// (through build_export_rows from a synthetic snapshot), self metrics, and the HTTP listener.
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <fmt/format.h>
#include <string>

#include "compiler/buckets.h"
#include "runtime/render/prometheus.h"
#include "runtime/collect/export_rows.h"
#include "runtime/serve/http_exporter.h"
#include "runtime/serve/serve.h"
#include "tests/support/expected_lines.h"

using namespace bpfql;

namespace {

PlanAggregate agg(std::string name, AggKind kind, bool is_signed = false) {
  PlanAggregate a;
  a.name = std::move(name);
  a.kind = kind;
  a.is_signed = is_signed;
  return a;
}

PlanField key(std::string name, ValueKind kind = ValueKind::String, uint32_t offset = 0,
              uint32_t size = 16) {
  return PlanField{std::move(name), kind, offset, size, Display::None};
}

PlanAttach attach(std::string spec) {
  PlanAttach a;
  a.spec = std::move(spec);
  return a;
}

IntervalResult result(const PlanQuery& q, std::vector<ResultRow> rows) {
  IntervalResult r;
  r.query = &q;
  r.time = std::chrono::system_clock::from_time_t(1800000000);
  r.rows = std::move(rows);
  return r;
}

std::string render_one(const Plan& plan, const IntervalResult& r, bool attached = true) {
  PrometheusRenderer renderer(plan);
  return renderer.render(std::span(&r, 1), attached);
}


Histogram hist(std::vector<Bucket> buckets) { return Histogram{std::move(buckets)}; }

}  // namespace

TEST_CASE("prometheus names: items and queries become [a-zA-Z0-9_] names") {
  CHECK(prometheus_name_part("count()") == "count");
  CHECK(prometheus_name_part("sum(args.count)") == "sum_args_count");
  CHECK(prometheus_name_part("read-bytes") == "read_bytes");
  CHECK(prometheus_name_part("lhist(retval, 0, 100, 10)") == "lhist_retval_0_100_10");
  CHECK(prometheus_name_part("bytes") == "bytes");
  CHECK(prometheus_label_name("comm") == "comm");
  CHECK(prometheus_label_name("args.fd") == "args_fd");
  CHECK(prometheus_label_name("syscall(args.id)") == "syscall_args_id");
  CHECK(prometheus_label_name("le") == "key_le");
  CHECK(prometheus_label_name("quantile") == "key_quantile");
  CHECK(prometheus_label_name("__name") == "key___name");
  CHECK(prometheus_label_name("9lives") == "_9lives");
}

TEST_CASE("prometheus escaping: label values and help text") {
  CHECK(prometheus_label_value("plain") == "plain");
  CHECK(prometheus_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(prometheus_label_value("caf\xC3\xA9") == "caf\xC3\xA9");               // UTF-8 stays
  CHECK(prometheus_label_value("x\xFFy") == "x\xEF\xBF\xBDy");                 // not UTF-8
  CHECK(prometheus_label_value(std::string("a\0b", 3)) == std::string("a\0b", 3));
  CHECK(prometheus_help_text("say \"hi\"\\\n") == "say \"hi\"\\\\\\n");
  CHECK(prometheus_double(2.5) == "2.5");
  CHECK(prometheus_double(3.0) == "3");
  CHECK(prometheus_double(1.0 / 3) == "0.3333333333333333");
}

TEST_CASE("prometheus: count and sum are counters, min/max/avg gauges, keys are labels") {
  Plan plan;
  PlanQuery q;
  q.name = "read-bytes";
  q.description = "bytes read";
  q.keys = {key("comm"), key("pid", ValueKind::Unsigned, 16, 4)};
  q.aggregates = {agg("count()", AggKind::Count), agg("bytes", AggKind::Sum),
                  agg("sum(args.ret)", AggKind::Sum, /*signed=*/true), agg("low", AggKind::Min),
                  agg("avg(retval)", AggKind::Avg)};
  q.columns = {"comm", "pid", "count()", "bytes", "sum(args.ret)", "low", "avg(retval)"};
  q.attaches = {attach("tracepoint:syscalls:sys_exit_read")};
  plan.queries.push_back(q);
  const PlanQuery& pq = plan.queries[0];

  std::vector<ResultRow> rows = {
      {{std::string("nginx"), uint64_t{42}, uint64_t{3}, uint64_t{300}, int64_t{-5}, uint64_t{7},
        100.5}},
      {{std::string("we\"ird\\\n"), uint64_t{7}, uint64_t{1}, uint64_t{10}, int64_t{10},
        std::monostate{}, std::monostate{}}},
  };
  std::string text = render_one(plan, result(pq, rows));

  // HELP says what the number is (cumulative: never "per second", whatever the description).
  CHECK_LINE(text, "# HELP bpfql_read_bytes_count_total Events counted since bpfql serve started per comm, pid "
                   "(count() of query read-bytes)");
  CHECK_LINE(text, "# TYPE bpfql_read_bytes_count_total counter");
  CHECK_LINE(text, "bpfql_read_bytes_count_total{comm=\"nginx\",pid=\"42\"} 3");
  CHECK_LINE(text, "bpfql_read_bytes_count_total{comm=\"we\\\"ird\\\\\\n\",pid=\"7\"} 1");
  // No stutter: query read-bytes, item bytes.
  CHECK_LINE(text, "# TYPE bpfql_read_bytes_total counter");
  CHECK_LINE(text, "bpfql_read_bytes_total{comm=\"nginx\",pid=\"42\"} 300");
  // Sums are counters (spec §6), signed or not.
  CHECK_LINE(text, "# TYPE bpfql_read_bytes_sum_args_ret_total counter");
  CHECK_LINE(text, "bpfql_read_bytes_sum_args_ret_total{comm=\"nginx\",pid=\"42\"} -5");
  CHECK_LINE(text, "# TYPE bpfql_read_bytes_low gauge");
  CHECK_LINE(text, "bpfql_read_bytes_low{comm=\"nginx\",pid=\"42\"} 7");
  CHECK_LINE(text, "# TYPE bpfql_read_bytes_avg_retval gauge");
  CHECK_LINE(text, "bpfql_read_bytes_avg_retval{comm=\"nginx\",pid=\"42\"} 100.5");
  // No value measured, no sample.
  CHECK(text.find("\nbpfql_read_bytes_low{comm=\"we") == std::string::npos);
  CHECK(text.find("\nbpfql_read_bytes_avg_retval{comm=\"we") == std::string::npos);

  CHECK_LINE(text, "bpfql_query_up{query=\"read-bytes\"} 1");
  CHECK_LINE(text, "# TYPE bpfql_lost_events_total counter");
  CHECK_LINE(text, "bpfql_lost_events_total{query=\"read-bytes\"} 0");
  CHECK_LINE(text, "bpfql_dropped_updates_total{query=\"read-bytes\"} 0");
  CHECK_LINE(text, "bpfql_last_refresh_timestamp_seconds{query=\"read-bytes\"} 1800000000.000");
}

TEST_CASE("prometheus: a byte array key is a label with its address, or its hex") {
  Plan plan;
  PlanQuery q;
  q.name = "peers";
  q.keys = {PlanField{"args.daddr", ValueKind::Bytes, 0, 4, Display::Ipv4},
            PlanField{"args.id", ValueKind::Bytes, 4, 2, Display::None}};
  q.aggregates = {agg("count()", AggKind::Count)};
  q.columns = {"args.daddr", "args.id", "count()"};
  plan.queries.push_back(q);
  std::vector<ResultRow> rows = {{{BytesValue{{127, 0, 0, 1}, BytesValue::Shown::Ipv4},
                                   BytesValue{{0xbe, 0xef}}, uint64_t{5}}}};
  std::string text = render_one(plan, result(plan.queries[0], rows));
  CHECK_LINE(text, "bpfql_peers_count_total{args_daddr=\"127.0.0.1\",args_id=\"beef\"} 5");
}

TEST_CASE("prometheus: a keyless query has no labels; before the first read only self metrics") {
  Plan plan;
  PlanQuery q;
  q.name = "getppid-count";
  q.aggregates = {agg("count()", AggKind::Count)};
  q.columns = {"count()"};
  q.attaches = {attach("tracepoint:syscalls:sys_enter_getppid")};
  plan.queries.push_back(q);
  IntervalResult r = result(plan.queries[0], {{{uint64_t{1000}}}});
  r.dropped = 4;
  std::string text = render_one(plan, r);
  CHECK_LINE(text, "bpfql_getppid_count_total 1000");
  CHECK_LINE(text, "bpfql_dropped_updates_total{query=\"getppid-count\"} 4");

  // Before the first read: no query family, but every per-query self metric, at 0.
  PrometheusRenderer renderer(plan);
  std::string before = renderer.render({}, false);
  CHECK(before.find("bpfql_getppid_count_total") == std::string::npos);
  CHECK_LINE(before, "bpfql_lost_events_total{query=\"getppid-count\"} 0");
  CHECK_LINE(before, "bpfql_dropped_updates_total{query=\"getppid-count\"} 0");
  CHECK_LINE(before, "bpfql_query_up{query=\"getppid-count\"} 0");
}

TEST_CASE("prometheus histogram: cumulative buckets, le = highest integer of [low, high), +Inf") {
  Plan plan;
  PlanQuery q;
  q.name = "h";
  q.keys = {key("comm")};
  q.aggregates = {agg("hist(retval)", AggKind::Hist, /*signed=*/true), agg("lat", AggKind::Lhist)};
  q.aggregates[1].lhist_min = 0;
  q.aggregates[1].lhist_max = 100;
  q.aggregates[1].lhist_step = 10;
  q.columns = {"comm", "hist(retval)", "lat"};
  plan.queries.push_back(q);

  Histogram h = hist({{std::nullopt, 0, 1}, {0, 1, 2}, {1, 2, 0}, {2, 4, 3}, {4, 8, 4}});
  Histogram open = hist({{90, 100, 5}, {100, std::nullopt, 6}});
  std::string text = render_one(plan, result(plan.queries[0], {{{std::string("sh"), h, open}}}));

  CHECK_LINE(text, "# TYPE bpfql_h_hist_retval histogram");
  const char* expected =
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"-1\"} 1\n"
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"0\"} 3\n"
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"1\"} 3\n"
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"3\"} 6\n"
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"7\"} 10\n"
      "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"15\"} 10\n";
  CHECK(text.find(expected) != std::string::npos);
  CHECK_LINE(text, "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"68719476735\"} 10");  // 2^36 - 1
  CHECK_LINE(text, "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"+Inf\"} 10");
  CHECK_LINE(text, "bpfql_h_hist_retval_count{comm=\"sh\"} 10");
  // An open last bucket is counted by +Inf only; every declared lhist bucket is there.
  const char* lat =
      "bpfql_h_lat_bucket{comm=\"sh\",le=\"-1\"} 0\n"
      "bpfql_h_lat_bucket{comm=\"sh\",le=\"9\"} 0\n";
  CHECK(text.find(lat) != std::string::npos);
  CHECK(text.find("bpfql_h_lat_bucket{comm=\"sh\",le=\"89\"} 0\n"
                  "bpfql_h_lat_bucket{comm=\"sh\",le=\"99\"} 5\n"
                  "bpfql_h_lat_bucket{comm=\"sh\",le=\"+Inf\"} 11\n"
                  "bpfql_h_lat_count{comm=\"sh\"} 11\n") != std::string::npos);
  // No sum is kept in the kernel for histograms: none is printed.
  CHECK(text.find("_sum") == std::string::npos);

  // An empty histogram has the same buckets as any other series of its family: series can be
  // summed by le from the first scrape on.
  auto bucket_lines = [](const std::string& t, const std::string& family) {
    std::vector<std::string> les;
    for (size_t at = t.find("\n" + family + "_bucket{"); at != std::string::npos;
         at = t.find("\n" + family + "_bucket{", at + 1))
      les.push_back(t.substr(t.find("le=", at), t.find('}', at) - t.find("le=", at)));
    return les;
  };
  std::string empty =
      render_one(plan, result(plan.queries[0], {{{std::string("sh"), Histogram{}, Histogram{}}}}));
  CHECK(bucket_lines(empty, "bpfql_h_hist_retval") == bucket_lines(text, "bpfql_h_hist_retval"));
  CHECK(bucket_lines(text, "bpfql_h_hist_retval").size() == 39);  // -1, 0, 1, 3, ..., 2^36-1, +Inf
  CHECK(bucket_lines(empty, "bpfql_h_lat") == bucket_lines(text, "bpfql_h_lat"));
  CHECK(bucket_lines(text, "bpfql_h_lat").size() == 12);  // -1, 9, 19, ..., 99, +Inf
  CHECK_LINE(empty, "bpfql_h_hist_retval_bucket{comm=\"sh\",le=\"+Inf\"} 0");
  CHECK_LINE(empty, "bpfql_h_hist_retval_count{comm=\"sh\"} 0");
}

TEST_CASE("prometheus stats: a summary (_sum and _count, no quantiles)") {
  Plan plan;
  PlanQuery q;
  q.name = "s";
  q.aggregates = {agg("stats(retval)", AggKind::Stats), agg("d", AggKind::Stats, true)};
  q.columns = {"stats(retval)", "d"};
  plan.queries.push_back(q);
  StatsValue a{4, 2.5, 10, false};
  StatsValue b{0, 0, 0, true};
  std::string text = render_one(plan, result(plan.queries[0], {{{a, b}}}));
  CHECK_LINE(text, "# TYPE bpfql_s_stats_retval summary");
  CHECK_LINE(text, "bpfql_s_stats_retval_count 4");
  CHECK_LINE(text, "bpfql_s_stats_retval_sum 10");
  CHECK_LINE(text, "# TYPE bpfql_s_d summary");
  CHECK_LINE(text, "bpfql_s_d_count 0");
  CHECK(text.find("_avg") == std::string::npos);
}

TEST_CASE("prometheus names never collide: across queries, with self metrics, within a query") {
  Plan plan;
  PlanQuery a;
  a.name = "a-b";
  a.aggregates = {agg("c", AggKind::Count), agg("c()", AggKind::Count)};
  a.columns = {"c", "c()"};
  PlanQuery b;
  b.name = "a";
  b.aggregates = {agg("b_c", AggKind::Count)};
  b.columns = {"b_c"};
  PlanQuery self;
  self.name = "lost";
  self.aggregates = {agg("events_total", AggKind::Count)};
  self.columns = {"events_total"};
  plan.queries = {a, b, self};
  auto samples = [](const Plan& p) {
    PrometheusRenderer renderer(p);
    std::vector<IntervalResult> rs;
    for (const auto& q : p.queries) {
      uint64_t v = q.name == "lost" ? 4 : q.name == "a" ? 3 : 1;
      rs.push_back(result(q, {{{v, uint64_t{2}}}}));
    }
    std::string text = renderer.render(rs, true);
    std::set<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.starts_with("#") && !line.starts_with("bpfql_last_refresh")) lines.insert(line);
    return lines;
  };
  auto lines = samples(plan);
  auto count = [&](auto pred) { return std::count_if(lines.begin(), lines.end(), pred); };
  // bpfql_a_b_c_total is claimed three times: all three get a suffix from a hash of what they
  // name; the query's events_total is never given the self metric's name.
  CHECK(count([](const std::string& l) { return l.starts_with("bpfql_a_b_c_total "); }) == 0);
  CHECK(count([](const std::string& l) { return l.starts_with("bpfql_a_b_c_"); }) == 3);
  CHECK(lines.count("bpfql_lost_events_total{query=\"lost\"} 0") == 1);
  CHECK(count([](const std::string& l) {
          return l.starts_with("bpfql_lost_events_") && l.ends_with("_total 4");
        }) == 1);
  // The same names whatever the order of the queries.
  Plan reversed;
  reversed.queries = {self, b, a};
  CHECK(samples(reversed) == lines);
}

namespace {

// A keyed percentile query (key: u64 pid) and a snapshot of its log-linear map, one CPU.
struct PercentileFixture {
  PlanQuery q;
  QuerySnapshot snapshot;

  PercentileFixture() {
    q.name = "lat";
    q.keys = {key("pid", ValueKind::Unsigned, 0, 8)};
    q.key_size = 8;
    PlanAggregate p = agg("percentile(duration, 50, 99)", AggKind::Percentile);
    p.percentiles = {50, 99};
    p.map_name = "lat_h0";
    q.aggregates = {p};
    q.columns = {"pid", "percentile(duration, 50, 99)"};
    PerCpuEntries map;
    map.key_size = 16;
    map.stride = 8;
    map.ncpus = 1;
    // pid 42: value 3 twice, 20 once, 100 four times.
    add(map, 42, buckets::log_linear_slot(3), 2);
    add(map, 42, buckets::log_linear_slot(20), 1);
    add(map, 42, buckets::log_linear_slot(100), 4);
    snapshot.hists = {map};
  }
  static void add(PerCpuEntries& map, uint64_t pid, uint64_t slot, uint64_t count) {
    uint8_t k[16];
    std::memcpy(k, &pid, 8);
    std::memcpy(k + 8, &slot, 8);
    uint8_t v[8];
    std::memcpy(v, &count, 8);
    map.add(std::span(k, 16), std::span(v, 8));
  }
};

}  // namespace

TEST_CASE("export rows: percentile() cells become their log-linear buckets") {
  PercentileFixture f;
  std::vector<ResultRow> rows = build_export_rows(f.q, f.snapshot, {});
  REQUIRE(rows.size() == 1);
  CHECK(std::get<uint64_t>(rows[0].cells[0]) == 42);
  const auto& h = std::get<Histogram>(rows[0].cells[1]);
  // Slots 3 .. the slot of 100, every bucket in between (zeros included), with real bounds.
  REQUIRE(!h.buckets.empty());
  CHECK(*h.buckets.front().low == 3);
  CHECK(*h.buckets.front().high == 4);
  CHECK(h.buckets.front().count == 2);
  CHECK(*h.buckets.back().low == 100);
  CHECK(*h.buckets.back().high == 104);
  CHECK(h.buckets.back().count == 4);
  uint64_t total = 0;
  for (const auto& b : h.buckets) total += b.count;
  CHECK(total == 7);
  // The same snapshot without export still yields percentiles (run is unaffected).
  std::vector<ResultRow> run_rows = build_rows(f.q, f.snapshot, {});
  CHECK(std::holds_alternative<PercentileValue>(run_rows[0].cells[1]));

  Plan plan;
  plan.queries = {f.q};
  std::string text = render_one(plan, result(plan.queries[0], rows));
  CHECK_LINE(text, "# TYPE bpfql_lat_percentile_duration_50_99 histogram");
  // Exported with the fixed set of two buckets per power of two: ... 2, 3, 5, ..., 15, 23, 31,
  // 47, 63, 95, 127, ...; each is a union of whole in-kernel slots, so the counts are exact.
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"2\"} 0");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"3\"} 2");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"15\"} 2");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"23\"} 3");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"95\"} 3");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"127\"} 7");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"+Inf\"} 7");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_count{pid=\"42\"} 7");
}

TEST_CASE("export rows: a signed percentile's negative buckets come first, as negative bounds") {
  PercentileFixture f;
  f.q.aggregates[0].is_signed = true;
  PerCpuEntries map;
  map.key_size = 16;
  map.stride = 8;
  map.ncpus = 1;
  // pid 42: -9 three times, 0 once, 5 twice.
  PercentileFixture::add(map, 42, static_cast<uint64_t>(buckets::log_linear_slot_signed(-9)), 3);
  PercentileFixture::add(map, 42, static_cast<uint64_t>(buckets::log_linear_slot_signed(0)), 1);
  PercentileFixture::add(map, 42, static_cast<uint64_t>(buckets::log_linear_slot_signed(5)), 2);
  f.snapshot.hists = {map};
  std::vector<ResultRow> rows = build_export_rows(f.q, f.snapshot, {});
  REQUIRE(rows.size() == 1);
  const auto& h = std::get<Histogram>(rows[0].cells[1]);
  REQUIRE(h.buckets.size() == 3);
  CHECK(*h.buckets[0].low == -9);
  CHECK(*h.buckets[0].high == -8);
  CHECK(h.buckets[0].count == 3);
  CHECK(*h.buckets[1].low == 0);
  CHECK(h.buckets[1].count == 1);
  CHECK(*h.buckets[2].low == 5);
  CHECK(h.buckets[2].count == 2);

  Plan plan;
  plan.queries = {f.q};
  std::string text = render_one(plan, result(plan.queries[0], rows));
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"-1\"} 3");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"0\"} 4");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"3\"} 4");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_bucket{pid=\"42\",le=\"5\"} 6");
  CHECK_LINE(text, "bpfql_lat_percentile_duration_50_99_count{pid=\"42\"} 6");

  // And the run's own cell: p50 is rank 3 of 6, -9.
  std::vector<ResultRow> run_rows = build_rows(f.q, f.snapshot, {});
  const auto& p = std::get<PercentileValue>(run_rows[0].cells[1]);
  CHECK(p.values[0].second == -9);
  CHECK(p.values[1].second == 5);
}

TEST_CASE("prepare_serve_plan: cumulative, no limit, an interval") {
  Plan plan;
  PlanQuery a;
  a.limit = 10;
  PlanQuery b;
  b.interval_ns = 5'000'000'000;
  plan.queries = {a, b};
  prepare_serve_plan(plan);
  CHECK(plan.queries[0].cumulative);
  CHECK(plan.queries[0].limit == 0);
  CHECK(*plan.queries[0].interval_ns == kDefaultServeInterval);
  // A query's own interval does not make serve's state older: every query is read each second.
  CHECK(*plan.queries[1].interval_ns == kDefaultServeInterval);
  prepare_serve_plan(plan, 250'000'000);  // --interval
  CHECK(*plan.queries[1].interval_ns == 250'000'000);
}

TEST_CASE("parse_listen") {
  auto ok = [](std::string_view text, std::string host, int port) {
    auto a = parse_listen(text);
    REQUIRE_MESSAGE(a.has_value(), text);
    CHECK(a->host == host);
    CHECK(a->port == port);
  };
  ok("127.0.0.1:9435", "127.0.0.1", 9435);
  ok(":9435", "0.0.0.0", 9435);
  ok("[::1]:80", "::1", 80);
  ok("localhost:65535", "localhost", 65535);
  auto unix_socket = parse_listen("unix:/run/bpfql.sock");
  REQUIRE(unix_socket.has_value());
  CHECK(unix_socket->unix_path == "/run/bpfql.sock");
  for (const char* bad : {"9435", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:94x5", "::1:9435", "[::1:9435", "a b:1", "host:-1"}) {
    auto a = parse_listen(bad);
    CHECK_MESSAGE(!a.has_value(), bad);
    if (!a) CHECK(a.error().find("--listen takes HOST:PORT") != std::string::npos);
  }
}

namespace {

int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("http exporter: /metrics, /, 404, and a port in use") {
  int port = free_port();
  auto exporter = HttpExporter::bind({"127.0.0.1", port, ""});
  REQUIRE_MESSAGE(exporter.has_value(), exporter.error());
  (*exporter)->publish("bpfql_up 1\n");
  (*exporter)->serve();

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  auto res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body == "bpfql_up 1\n");
  CHECK(res->get_header_value("Content-Type").starts_with("text/plain; version=0.0.4"));
  (*exporter)->publish("bpfql_up 0\n");
  res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->body == "bpfql_up 0\n");
  res = client.Get("/");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body.find("href=\"/metrics\"") != std::string::npos);
  res = client.Get("/nothing");
  REQUIRE(res);
  CHECK(res->status == 404);

  auto again = HttpExporter::bind({"127.0.0.1", port, ""});
  REQUIRE(!again.has_value());
  CHECK(again.error() == fmt::format("cannot listen on 127.0.0.1:{}: Address already in use", port));
}

TEST_CASE("PrometheusOutput publishes every query's latest read, in Plan order") {
  Plan plan;
  PlanQuery a;
  a.name = "a";
  a.aggregates = {agg("count()", AggKind::Count)};
  a.columns = {"count()"};
  PlanQuery b = a;
  b.name = "b";
  plan.queries = {a, b};
  auto exporter = HttpExporter::bind({"127.0.0.1", free_port(), ""});
  REQUIRE(exporter.has_value());
  PrometheusOutput output(plan, **exporter, "9.9.9");
  CHECK_LINE((*exporter)->metrics(), "bpfql_query_up{query=\"a\"} 0");
  CHECK((*exporter)->metrics().find("bpfql_a_count") == std::string::npos);
  CHECK((*exporter)->metrics().find("bpfql_build_info{version=\"9.9.9\",kernel=\"") != std::string::npos);
  CHECK((*exporter)->metrics().find("\nprocess_resident_memory_bytes ") != std::string::npos);

  // The exposition is built once per refresh: when every query has been read.
  IntervalResult b1 = result(plan.queries[1], {{{uint64_t{5}}}});
  b1.dropped = 2;
  output.interval(b1);
  output.flush();
  CHECK((*exporter)->metrics().find("bpfql_b_count_total") == std::string::npos);
  IntervalResult a1 = result(plan.queries[0], {{{uint64_t{7}}}});
  output.interval(a1);
  output.flush();
  CHECK_LINE((*exporter)->metrics(), "bpfql_b_count_total 5");
  CHECK_LINE((*exporter)->metrics(), "bpfql_dropped_updates_total{query=\"b\"} 2");
  output.interval(result(plan.queries[1], {{{uint64_t{9}}}}));
  output.interval(a1);
  output.flush();
  std::string text = (*exporter)->metrics();
  CHECK(text.find("bpfql_b_count_total 5") == std::string::npos);
  std::vector<IntervalResult> both = {a1, result(plan.queries[1], {{{uint64_t{9}}}})};
  PrometheusRenderer renderer(plan);
  CHECK(text.starts_with(renderer.render(both, false)));
  CHECK(text.find("bpfql_a_count_total 7") < text.find("bpfql_b_count_total 9"));
}

TEST_CASE("prometheus: rows that show the same labels become one series (no repeated series)") {
  // e.g. ksym() of two addresses in one function: different keys, the same label value.
  Plan plan;
  PlanQuery q;
  q.name = "m";
  q.keys = {key("ksym(arg0)")};
  q.aggregates = {agg("count()", AggKind::Count), agg("min(x)", AggKind::Min),
                  agg("max(x)", AggKind::Max), agg("avg(x)", AggKind::Avg),
                  agg("stats(x)", AggKind::Stats), agg("hist(x)", AggKind::Hist)};
  q.columns = {"ksym(arg0)", "count()", "min(x)", "max(x)", "avg(x)", "stats(x)", "hist(x)"};
  plan.queries.push_back(q);
  std::vector<ResultRow> rows = {
      {{std::string("vfs_read"), uint64_t{3}, uint64_t{5}, uint64_t{9}, 7.0, StatsValue{3, 7, 21, false},
        hist({{4, 8, 1}, {8, 16, 2}})}},
      {{std::string("other"), uint64_t{1}, uint64_t{1}, uint64_t{1}, 1.0, StatsValue{1, 1, 1, false},
        hist({{1, 2, 1}})}},
      {{std::string("vfs_read"), uint64_t{2}, uint64_t{2}, uint64_t{20}, 11.0,
        StatsValue{2, 10.5, 21, false}, hist({{2, 4, 1}, {8, 16, 1}})}},
  };
  std::string text = render_one(plan, result(plan.queries[0], rows));
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count("\nbpfql_m_count_total{ksym_arg0=\"vfs_read\"} ") == 1);
  CHECK_LINE(text, "bpfql_m_count_total{ksym_arg0=\"vfs_read\"} 5");
  CHECK_LINE(text, "bpfql_m_count_total{ksym_arg0=\"other\"} 1");
  CHECK_LINE(text, "bpfql_m_min_x{ksym_arg0=\"vfs_read\"} 2");
  CHECK_LINE(text, "bpfql_m_max_x{ksym_arg0=\"vfs_read\"} 20");
  CHECK(text.find("\nbpfql_m_avg_x{ksym_arg0=\"vfs_read\"}") == std::string::npos);  // not mergeable
  CHECK_LINE(text, "bpfql_m_avg_x{ksym_arg0=\"other\"} 1");
  CHECK_LINE(text, "bpfql_m_stats_x_count{ksym_arg0=\"vfs_read\"} 5");
  CHECK_LINE(text, "bpfql_m_stats_x_sum{ksym_arg0=\"vfs_read\"} 42");
  const char* merged =
      "bpfql_m_hist_x_bucket{ksym_arg0=\"vfs_read\",le=\"3\"} 1\n"
      "bpfql_m_hist_x_bucket{ksym_arg0=\"vfs_read\",le=\"7\"} 2\n"
      "bpfql_m_hist_x_bucket{ksym_arg0=\"vfs_read\",le=\"15\"} 5\n"
      "bpfql_m_hist_x_bucket{ksym_arg0=\"vfs_read\",le=\"31\"} 5\n";
  CHECK_MESSAGE(text.find(merged) != std::string::npos, text);
}

TEST_CASE("prometheus: the series cap keeps the label sets it exported and counts the refused") {
  Plan plan;
  PlanQuery q;
  q.name = "pids";
  q.keys = {key("pid", ValueKind::Unsigned, 0, 8)};
  q.aggregates = {agg("count()", AggKind::Count)};
  q.columns = {"pid", "count()"};
  plan.queries.push_back(q);
  PrometheusRenderer renderer(plan, /*max_series=*/2);
  auto rows = [](std::vector<uint64_t> pids) {
    std::vector<ResultRow> out;
    for (uint64_t p : pids) out.push_back({{p, uint64_t{p * 10}}});
    return out;
  };
  std::vector<IntervalResult> first = {result(plan.queries[0], rows({1, 2, 3}))};
  std::string text = renderer.render(first, true);
  CHECK_LINE(text, "bpfql_pids_count_total{pid=\"1\"} 10");
  CHECK_LINE(text, "bpfql_pids_count_total{pid=\"2\"} 20");
  CHECK(text.find("pid=\"3\"") == std::string::npos);
  CHECK_LINE(text, "bpfql_series{query=\"pids\"} 2");
  CHECK_LINE(text, "bpfql_series_refused{query=\"pids\"} 1");
  // Later reads list the keys in another order, with a new one first: the exported ones stay.
  std::vector<IntervalResult> later = {result(plan.queries[0], rows({4, 3, 2, 1}))};
  text = renderer.render(later, true);
  CHECK_LINE(text, "bpfql_pids_count_total{pid=\"1\"} 10");
  CHECK_LINE(text, "bpfql_pids_count_total{pid=\"2\"} 20");
  CHECK_LINE(text, "bpfql_series_refused{query=\"pids\"} 2");
}

TEST_CASE("prometheus: a report: open query's counts and sums are gauges of what is open now") {
  Plan plan;
  PlanQuery q;
  q.name = "memleak-outstanding";
  q.report_open = true;
  q.keys = {key("comm")};
  q.aggregates = {agg("blocks", AggKind::Count), agg("bytes", AggKind::Sum)};
  q.columns = {"comm", "blocks", "bytes"};
  q.attaches = {attach("uretprobe:c:malloc")};
  plan.queries.push_back(q);
  std::vector<ResultRow> rows = {{{std::string("app"), uint64_t{15}, uint64_t{64815}}}};
  std::string text = render_one(plan, result(plan.queries[0], rows));
  CHECK_LINE(text, "# HELP bpfql_memleak_outstanding_blocks Spans open now per comm (blocks of "
                   "query memleak-outstanding)");
  CHECK_LINE(text, "# TYPE bpfql_memleak_outstanding_blocks gauge");
  CHECK_LINE(text, "bpfql_memleak_outstanding_blocks{comm=\"app\"} 15");
  CHECK_LINE(text, "# TYPE bpfql_memleak_outstanding_bytes gauge");
  CHECK(text.find("_total{comm") == std::string::npos);
}
