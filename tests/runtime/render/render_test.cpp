// Renderers, from hand-built results: exact table, JSON, CSV and folded text.
#include <doctest/doctest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "runtime/collect/output.h"
#include "runtime/render/csv.h"
#include "runtime/render/folded.h"
#include "runtime/render/format_cell.h"
#include "runtime/render/json.h"
#include "runtime/render/table.h"

using namespace bpfql;

namespace {

// 2026-11-29T11:00:05Z, the spec's example time.
std::chrono::system_clock::time_point spec_time() {
  tm parts{};
  parts.tm_year = 2026 - 1900;
  parts.tm_mon = 10;
  parts.tm_mday = 29;
  parts.tm_hour = 11;
  parts.tm_min = 0;
  parts.tm_sec = 5;
  return std::chrono::system_clock::from_time_t(timegm(&parts));
}

// Table headers print local time; pin the zone so the expected text is exact.
struct UtcZone {
  UtcZone() {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

PlanQuery make_query(std::string name, std::vector<std::string> columns) {
  PlanQuery q;
  q.name = std::move(name);
  q.columns = std::move(columns);
  return q;
}

IntervalResult make_result(const PlanQuery& q, std::vector<ResultRow> rows) {
  IntervalResult r;
  r.query = &q;
  r.time = spec_time();
  r.interval_s = 5;
  r.rows = std::move(rows);
  return r;
}

std::string render(OutputFormat format, const IntervalResult& r) {
  std::ostringstream out;
  auto output = make_output(format, out);
  output->interval(r);
  output->flush();
  return out.str();
}

std::string bar(size_t at, size_t width = 52) {
  return std::string(at, '@') + std::string(width - at, ' ');
}

}  // namespace

TEST_CASE("table: aligned columns, numbers right-aligned, header with the query and time") {
  UtcZone utc;
  PlanQuery q = make_query("opens", {"comm", "count()"});
  IntervalResult r = make_result(
      q, {{{std::string("nginx"), uint64_t{42}}}, {{std::string("sshd"), uint64_t{7}}}});
  CHECK(render(OutputFormat::Table, r) ==
        "--- opens  11:00:05  (5s) ---\n"
        "comm   count()\n"
        "nginx       42\n"
        "sshd         7\n");
}

TEST_CASE("table: a histogram prints below its row with bpftrace-like bars") {
  UtcZone utc;
  PlanQuery q = make_query("sizes", {"comm", "hist(bytes)"});
  Histogram h{{{4, 8, 12}, {8, 16, 3}, {1024, 2048, 6}}};
  IntervalResult r = make_result(q, {{{std::string("nginx"), h}}});
  r.dropped = 3;
  CHECK(render(OutputFormat::Table, r) ==
        "--- sizes  11:00:05  (5s) ---\n"
        "comm\n"
        "nginx\n"
        "  hist(bytes):\n"
        "    [4, 8)   12 |" +
            bar(52) +
            "|\n"
            "    [8, 16)   3 |" +
            bar(13) +
            "|\n"
            "    [1K, 2K)  6 |" +
            bar(26) +
            "|\n"
            "dropped 3 map updates (a map was full: raise max_entries)\n");
}

TEST_CASE("table: percentile and stats cells inline, the relative error stated") {
  UtcZone utc;
  PlanQuery q = make_query("lat", {"percentile(d, 50, 99)", "stats(d)"});
  PercentileValue p{{{50, 123}, {99, 456}}, 1.0 / 16};
  StatsValue s{3, 2.5, 7, false};
  IntervalResult r = make_result(q, {{{p, s}}});
  std::string text = render(OutputFormat::Table, r);
  CHECK(text.find("p50=123 p99=456 (±6.25%)  count=3 avg=2.5 sum=7\n") != std::string::npos);
}

TEST_CASE("table: dropped and lost lines appear only when non-zero") {
  UtcZone utc;
  PlanQuery q = make_query("opens", {"count()"});
  IntervalResult r = make_result(q, {{{uint64_t{1}}}});
  std::string clean = render(OutputFormat::Table, r);
  CHECK(clean.find("dropped") == std::string::npos);
  CHECK(clean.find("lost") == std::string::npos);
  r.lost = 9;
  std::string lossy = render(OutputFormat::Table, r);
  CHECK(lossy.find("lost 9 events\n") != std::string::npos);
  CHECK(lossy.find("dropped") == std::string::npos);
}

TEST_CASE("table: stacks print one frame per line, and an empty interval says so") {
  UtcZone utc;
  PlanQuery q = make_query("prof", {"kstack", "count()"});
  IntervalResult r = make_result(q, {{{StackValue{{"inner", "outer"}}, uint64_t{5}}}});
  CHECK(render(OutputFormat::Table, r) ==
        "--- prof  11:00:05  (5s) ---\n"
        "count()\n"
        "      5\n"
        "  kstack:\n"
        "    inner\n"
        "    outer\n");
  r.rows.clear();
  CHECK(render(OutputFormat::Table, r) == "--- prof  11:00:05  (5s) ---\n(no rows)\n");
}

TEST_CASE("table: a stream prints its header once, then one line per event") {
  UtcZone utc;
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}, {"comm", ValueKind::String, 12, 16}};
  std::ostringstream out;
  auto output = make_table_output(out, TimeShown::Boot);
  output->event({&q, 1'500'000'000, {uint64_t{42}, std::string("sh")}});
  output->event({&q, 2'000'001'000, {uint64_t{7}, std::string("bash")}});
  output->finished();
  std::string text = out.str();
  CHECK(text.find("--- execs  ") == 0);
  // Columns as wide as their header and values (not a fixed width per type).
  CHECK(text.substr(text.find('\n') + 1) ==
        "time      pid  comm\n"
        "1.500000   42  sh\n"
        "2.000001    7  bash\n");
}

TEST_CASE("table: a stream's columns fit the widest value of the batch, first row included") {
  UtcZone utc;
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}, {"comm", ValueKind::String, 12, 16}};
  std::ostringstream out;
  auto output = make_table_output(out, TimeShown::Boot);
  output->event({&q, 1'000'000'000, {uint64_t{7}, std::string("sh")}});
  output->event({&q, 2'000'000'000, {uint64_t{1234567}, std::string("a-long-command")}});
  output->event({&q, 3'000'000'000, {uint64_t{42}, std::string("ls")}});
  // Held until the batch ends (its window, kBatchRows rows, or a second): nothing yet, and the
  // session is told when to come back.
  CHECK(out.str().empty());
  auto due = output->flush_deadline();
  REQUIRE(due.has_value());
  CHECK(*due > std::chrono::steady_clock::now());
  CHECK(*due <= std::chrono::steady_clock::now() + std::chrono::seconds(1));
  output->flush();  // not due yet
  CHECK(out.str().empty());
  output->window_ended(q);
  CHECK_FALSE(output->flush_deadline().has_value());
  std::string text = out.str();
  CHECK(text.substr(text.find('\n') + 1) ==
        "time          pid  comm\n"
        "1.000000        7  sh\n"
        "2.000000  1234567  a-long-command\n"
        "3.000000       42  ls\n");
  // A later, narrower batch keeps the widths (the columns never jump back).
  output->event({&q, 4'000'000'000, {uint64_t{1}, std::string("x")}});
  output->finished();
  CHECK(out.str().ends_with("3.000000       42  ls\n4.000000        1  x\n"));
}

TEST_CASE("table: a stream prints its rows at the latest after 256 of them") {
  UtcZone utc;
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}};
  std::ostringstream out;
  auto output = make_table_output(out, TimeShown::Boot);
  for (uint64_t i = 0; i < 255; ++i) output->event({&q, 1'000'000'000 + i, {i}});
  CHECK(out.str().empty());
  output->event({&q, 2'000'000'000, {uint64_t{255}}});
  std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 2 + 256);  // section, header, rows
  CHECK_FALSE(output->flush_deadline().has_value());
}

TEST_CASE("table: a window whose limit held events back ends with their count") {
  UtcZone utc;
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.limit = 1;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}};
  std::ostringstream out;
  auto output = make_table_output(out, TimeShown::Boot);
  output->event({&q, 1'000'000'000, {uint64_t{42}}});
  output->events_not_printed(q, 1234);
  output->event({&q, 2'000'000'000, {uint64_t{43}}});
  output->finished();
  std::string text = out.str();
  INFO("table:\n" << text);
  CHECK(text.find("1.000000   42\n... execs: 1234 more events not printed (limit 1)\n\n--- execs  ") !=
        std::string::npos);
  // The next window's event begins a section of its own, with the header.
  CHECK(text.ends_with("time      pid\n2.000000   43\n"));
}

TEST_CASE("json, csv and folded: what a limit held back is a note on stderr, not a line of output") {
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.limit = 2;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}};
  for (auto make : {make_json_output, make_csv_output, make_folded_output}) {
    std::ostringstream out, notes;
    auto output = make(out, notes);
    output->event({&q, 99, {uint64_t{42}}});
    std::string events = out.str();
    output->events_not_printed(q, 7);
    output->flush();
    CHECK(out.str() == events);
    CHECK(notes.str() == "bpfql: execs: 7 more events not printed (limit 2)\n");
  }
}

TEST_CASE("json: exactly the spec's example line") {
  PlanQuery q = make_query("opens", {"comm", "count()"});
  IntervalResult r = make_result(q, {{{std::string("nginx"), uint64_t{42}}}});
  CHECK(
      render(OutputFormat::Json, r) ==
      R"J({"query":"opens","time":"2026-11-29T11:00:05Z","interval_s":5,"rows":[{"comm":"nginx","count()":42}],"dropped":0,"lost":0,"schema":2})J"
      "\n");
  r.interval_s = 0.25;
  r.dropped = 2;
  CHECK(render(OutputFormat::Json, r).find(R"J("interval_s":0.25,)J") != std::string::npos);
  CHECK(render(OutputFormat::Json, r).find(R"J("dropped":2,"lost":0,"schema":2})J") != std::string::npos);
}

TEST_CASE("json: histogram buckets with open bounds as null") {
  Histogram h{{{std::nullopt, 0, 1}, {0, 1, 2}, {1024, std::nullopt, 3}}};
  CHECK(
      json_text(cell_to_json(h)) ==
      R"J([{"min":null,"max":0,"count":1},{"min":0,"max":1,"count":2},{"min":1024,"max":null,"count":3}])J");
}

TEST_CASE("json: percentile, stats, stack, signed and double cells") {
  PercentileValue p{{{50, 123}, {99, 456.5}, {99.9, 1000}}, 1.0 / 16};
  CHECK(json_text(cell_to_json(p)) == R"J({"p50":123,"p99":456.5,"p99.9":1000})J");
  CHECK(json_text(cell_to_json(StatsValue{3, 2.5, 7, false})) ==
        R"J({"count":3,"avg":2.5,"sum":7})J");
  CHECK(json_text(cell_to_json(StatsValue{1, -5, -5, true})) ==
        R"J({"count":1,"avg":-5,"sum":-5})J");
  CHECK(json_text(cell_to_json(StatsValue{1, 0, -1, false})) ==
        R"J({"count":1,"avg":0,"sum":18446744073709551615})J");
  CHECK(json_text(cell_to_json(StackValue{{"a", "b"}})) == R"J(["a","b"])J");
  CHECK(json_text(cell_to_json(int64_t{-2})) == "-2");
  CHECK(json_text(cell_to_json(1.5)) == "1.5");
  CHECK(json_text(cell_to_json(true)) == "true");
  CHECK(json_text(cell_to_json(Cell{})) == "null");
}

TEST_CASE("json: a stream event keeps field order") {
  PlanQuery q = make_query("execs", {});
  q.streaming = true;
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4},
                    {"comm", ValueKind::String, 12, 16},
                    {"args.filename", ValueKind::String, 28, 64}};
  std::ostringstream out;
  auto output = make_output(OutputFormat::Json, out);
  output->event({&q, 123456789, {uint64_t{42}, std::string("sh"), std::string("/bin/ls")}});
  // "time" is the wall-clock time of ts (ns since boot), which depends on when the machine booted.
  std::string text = out.str();
  size_t time_at = text.find(R"J(,"time":")J");
  REQUIRE(time_at != std::string::npos);
  size_t time_end = text.find('"', time_at + 9);
  CHECK(text.substr(time_end - 8, 8).find('.') != std::string::npos);  // microseconds
  CHECK(text.substr(0, time_at) + text.substr(time_end + 1) ==
        R"J({"query":"execs","ts":123456789,"pid":42,"comm":"sh","args.filename":"/bin/ls","schema":2})J"
        "\n");
}

TEST_CASE("json: bytes that are not UTF-8 do not throw and give valid JSON") {
  PlanQuery q = make_query("opens", {"path", "count()"});
  IntervalResult r = make_result(q, {{{std::string("bad\xff\xfe name"), uint64_t{1}}}});
  std::string line;
  CHECK_NOTHROW(line = render(OutputFormat::Json, r));
  auto parsed = nlohmann::json::parse(line);
  CHECK(parsed["rows"][0]["path"].get<std::string>() == "bad\xEF\xBF\xBD\xEF\xBF\xBD name");
}

TEST_CASE("csv: header once per query, RFC 4180 quoting, complex cells as quoted JSON") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");

  PlanQuery q = make_query("opens", {"comm", "count()", "hist(x)"});
  IntervalResult r = make_result(q, {{{std::string("a,b"), uint64_t{42}, Histogram{{{4, 8, 1}}}}}});
  std::ostringstream out, notes;
  auto output = make_csv_output(out, notes);
  output->interval(r);
  r.dropped = 4;
  output->interval(r);
  CHECK(
      out.str() ==
      "query,time,comm,count(),hist(x)\n"
      "opens,2026-11-29T11:00:05Z,\"a,b\",42,\"[{\"\"min\"\":4,\"\"max\"\":8,\"\"count\"\":1}]\"\n"
      "opens,2026-11-29T11:00:05Z,\"a,b\",42,\"[{\"\"min\"\":4,\"\"max\"\":8,\"\"count\"\":1}]"
      "\"\n");
  CHECK(notes.str() == "bpfql: opens: dropped 4 map updates (a map was full: raise max_entries)\n");
}

TEST_CASE("csv: stream rows start with the query and ts") {
  PlanQuery q = make_query("execs", {});
  q.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}, {"comm", ValueKind::String, 12, 16}};
  std::ostringstream out, notes;
  auto output = make_csv_output(out, notes);
  output->event({&q, 99, {uint64_t{42}, std::string("sh")}});
  output->event({&q, 100, {uint64_t{43}, std::string("ls")}});
  CHECK(out.str() == "query,ts,pid,comm\nexecs,99,42,sh\nexecs,100,43,ls\n");
}

TEST_CASE("folded: key cells, then stack frames outermost first, then the count") {
  PlanQuery q = make_query("prof", {"comm", "kstack", "count()"});
  q.keys = {{"comm", ValueKind::String, 0, 16}, {"kstack", ValueKind::KernelStack, 16, 4}};
  PlanAggregate count;
  count.name = "count()";
  q.aggregates = {count};
  IntervalResult r =
      make_result(q, {{{std::string("nginx"), StackValue{{"c;x", "b", "a"}}, uint64_t{5}}},
                      {{std::string("sshd"), StackValue{{"z"}}, uint64_t{2}}}});
  std::ostringstream out, notes;
  auto output = make_folded_output(out, notes);
  output->interval(r);
  CHECK(out.str().empty());  // the whole run is folded: written when it ends
  output->finished();
  CHECK(out.str() == "nginx;a;b;c:x 5\nsshd;z 2\n");
  CHECK(notes.str().empty());
}

TEST_CASE("byte arrays: the same text in table, JSON and CSV: an address or lowercase hex") {
  UtcZone utc;
  PlanQuery q = make_query("connects", {});
  q.streaming = true;
  q.event_fields = {{"args.saddr", ValueKind::Bytes, 8, 4, Display::Ipv4},
                    {"args.daddr_v6", ValueKind::Bytes, 12, 16, Display::Ipv6},
                    {"args.id", ValueKind::Bytes, 28, 3}};
  using Shown = BytesValue::Shown;
  std::vector<uint8_t> v6(16, 0);
  v6[0] = 0xfe;
  v6[1] = 0x80;
  v6[15] = 1;
  StreamRow event{&q, 1'500'000'000,
                  {BytesValue{{127, 0, 0, 1}, Shown::Ipv4}, BytesValue{v6, Shown::Ipv6},
                   BytesValue{{0x0a, 0x1b, 0x2c}, Shown::Hex}}};

  std::ostringstream table;
  {
    auto output = make_table_output(table, TimeShown::Boot);
    output->event(event);
    output->finished();
  }
  CHECK(table.str().substr(table.str().find('\n') + 1) ==
        "time      args.saddr  args.daddr_v6  args.id\n"
        "1.500000  127.0.0.1   fe80::1        0a1b2c\n");

  std::ostringstream json;
  make_output(OutputFormat::Json, json)->event(event);
  CHECK(json.str().find(
            R"J("args.saddr":"127.0.0.1","args.daddr_v6":"fe80::1","args.id":"0a1b2c","schema":2})J"
            "\n") != std::string::npos);

  std::ostringstream csv, notes;
  make_csv_output(csv, notes)->event(event);
  CHECK(csv.str() ==
        "query,ts,args.saddr,args.daddr_v6,args.id\n"
        "connects,1500000000,127.0.0.1,fe80::1,0a1b2c\n");

  // As a group_by key of an aggregating query.
  PlanQuery agg = make_query("by-peer", {"args.daddr", "count()"});
  IntervalResult r = make_result(agg, {{{BytesValue{{10, 0, 0, 9}, Shown::Ipv4}, uint64_t{3}}}});
  CHECK(render(OutputFormat::Table, r) ==
        "--- by-peer  11:00:05  (5s) ---\n"
        "args.daddr  count()\n"
        "10.0.0.9          3\n");
  CHECK(render(OutputFormat::Json, r).find(R"J("rows":[{"args.daddr":"10.0.0.9","count()":3}])J") !=
        std::string::npos);
}

TEST_CASE("histogram labels: open bounds, single values, K suffixes only when all fit") {
  CHECK(bucket_label({std::nullopt, 0, 1}, false) == "(..., 0)");
  CHECK(bucket_label({0, 1, 1}, false) == "[0]");
  CHECK(bucket_label({2, 4, 1}, false) == "[2, 4)");
  CHECK(bucket_label({128, std::nullopt, 1}, false) == "[128, ...)");
  CHECK(bucket_label({1 << 20, 2 << 20, 1}, true) == "[1M, 2M)");
  Histogram linear{{{1000, 1500, 1}, {1500, 2000, 2}}};
  CHECK(format_histogram(linear, 4) ==
        std::vector<std::string>{"[1000, 1500) 1 |@@  |", "[1500, 2000) 2 |@@@@|"});
}

TEST_CASE("table: the stream header repeats when another query printed in between") {
  UtcZone utc;
  PlanQuery a = make_query("execs", {});
  a.event_fields = {{"pid", ValueKind::Unsigned, 8, 4}};
  PlanQuery b = make_query("opens", {"count()"});
  std::ostringstream out;
  auto output = make_output(OutputFormat::Table, out);
  output->event({&a, 1'000'000'000, {uint64_t{1}}});
  output->event({&a, 2'000'000'000, {uint64_t{2}}});
  output->interval(make_result(b, {{{uint64_t{3}}}}));
  output->event({&a, 3'000'000'000, {uint64_t{3}}});
  output->finished();
  std::string text = out.str();
  size_t headers = 0;
  for (size_t at = text.find("--- execs"); at != std::string::npos;
       at = text.find("--- execs", at + 1)) {
    ++headers;
  }
  CHECK(headers == 2);
  CHECK(text.find("--- opens  11:00:05  (5s) ---\ncount()\n      3\n\n--- execs") != std::string::npos);
}

TEST_CASE("folded: a streamed event with a user stack counts 1; make_output knows the format") {
  PlanQuery q = make_query("samples", {});
  q.event_fields = {{"comm", ValueKind::String, 8, 16}, {"ustack", ValueKind::UserStack, 24, 4}};
  std::ostringstream out;
  auto output = make_output(OutputFormat::Folded, out);
  output->event({&q, 1, {std::string("app"), StackValue{{"leaf", "main"}}}});
  output->event({&q, 2, {std::string("app"), StackValue{{"leaf", "main"}}}});
  output->finished();
  CHECK(out.str() == "app;main;leaf 2\n");  // folded over the whole run
}
