// The checker's units (compiler/units.h): what it infers, what a query declares, what
// arithmetic keeps; computed select items over aggregates; symbolic() from the print fmt.
#include <doctest/doctest.h>

#include "compiler/check/print_symbolic.h"
#include "compiler/units.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;
namespace b = bpfql;

namespace {

const b::CheckedQuery& only_query(const b::Result<b::CheckedProgram>& r) {
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  REQUIRE(r->queries.size() == 1);
  return r->queries[0];
}

const char* kSpan =
    "span: {begin: tracepoint:syscalls:sys_enter_read, end: tracepoint:syscalls:sys_exit_read}\n";

}  // namespace

TEST_CASE("unit names: base units, scaled units, rates") {
  CHECK(b::unit_name(b::Unit::nanoseconds()) == "ns");
  CHECK(b::unit_name({b::Unit::Dim::Time, 1e6, false}) == "ms");
  CHECK(b::unit_name(b::Unit::bytes()) == "bytes");
  CHECK(b::unit_name({b::Unit::Dim::Bytes, 1048576.0, true}) == "MiB/s");
  CHECK(b::unit_name({b::Unit::Dim::None, 1, true}) == "/s");
  CHECK(b::unit_name({}) == "");
  // duration / 1000 is µs; duration / 7 is no unit anyone reads.
  CHECK(b::unit_name(b::unit_after_scaling(b::Unit::nanoseconds(), 1000, true)) == "us");
  CHECK(b::unit_after_scaling(b::Unit::nanoseconds(), 7, true).none());
}

TEST_CASE("duration is ns; a read's count and return value are bytes") {
  auto r = check_yaml(std::string(kSpan) + "select: [hist(duration), sum(retval) as bytes, count()]\n");
  const auto& q = only_query(r);
  REQUIRE(q.aggregates.size() == 3);
  CHECK(b::unit_name(q.aggregates[0].unit) == "ns");
  CHECK(b::unit_name(q.aggregates[1].unit) == "bytes");
  CHECK(q.aggregates[2].unit.none());

  auto enter = check_yaml("probe: tracepoint:syscalls:sys_enter_read\nselect: sum(args.count)\n");
  CHECK(b::unit_name(only_query(enter).aggregates[0].unit) == "bytes");
  // getpid's return value counts nothing.
  auto pid = check_yaml("probe: tracepoint:syscalls:sys_exit_getppid\nselect: sum(retval)\n");
  CHECK(only_query(pid).aggregates[0].unit.none());
}

TEST_CASE("arithmetic carries units: duration / 1000 is µs, duration / 3 has none") {
  auto r = check_yaml(std::string(kSpan) + "select: [avg(duration / 1000) as us, avg(duration / 3) as third]\n");
  const auto& q = only_query(r);
  CHECK(b::unit_name(q.aggregates[0].unit) == "us");
  CHECK(q.aggregates[1].unit.none());
}

TEST_CASE("usecs(), msecs(), bytes() declare a unit, around a value or an aggregate") {
  auto r = check_yaml(
      "probe: tracepoint:sched:sched_process_exec\n"
      "select: [usecs(max(args.pid)), bytes(sum(args.old_pid))]\n");
  const auto& q = only_query(r);
  REQUIRE(q.aggregates.size() == 2);
  CHECK(q.aggregates[0].name == "usecs(max(args.pid))");
  CHECK(b::unit_name(q.aggregates[0].unit) == "us");
  CHECK(b::unit_name(q.aggregates[1].unit) == "bytes");

  auto stream = check_yaml("probe: tracepoint:sched:sched_process_exec\nselect: [msecs(args.pid), comm]\n");
  const auto& s = only_query(stream);
  REQUIRE(s.stream.size() == 2);
  CHECK(b::unit_name(s.stream[0].unit) == "ms");
  CHECK(s.stream[0].name == "msecs(args.pid)");

  CHECK(check_error("probe: tracepoint:sched:sched_process_exec\nselect: [usecs(comm)]\n")
            .find("needs an integer") != std::string::npos);
}

TEST_CASE("computed select items: aggregates combined at print time") {
  auto r = check_yaml(std::string(kSpan) +
                      "select: [sum(duration) / 1000 as us, count() / $interval as per_s, "
                      "rate(sum(retval)) as throughput, count()]\n"
                      "interval: 5s\n");
  const auto& q = only_query(r);
  REQUIRE(q.computed.size() == 3);
  CHECK(q.computed[0].name == "us");
  CHECK(b::unit_name(q.computed[0].unit) == "us");
  CHECK(b::unit_name(q.computed[1].unit) == "/s");
  CHECK(b::unit_name(q.computed[2].unit) == "bytes/s");
  // The aggregates they need are kept in the kernel once; count() is shared with the select.
  std::vector<std::string> names;
  for (const auto& a : q.aggregates) names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"sum(duration)", "count()", "sum(retval)"});
  CHECK(q.columns == std::vector<std::string>{"us", "per_s", "throughput", "count()"});

  CHECK(check_error(std::string(kSpan) + "select: [hist(duration) / 2 as h]\n")
            .find("is not one number") != std::string::npos);
  CHECK(check_error(std::string(kSpan) + "select: [count() % 2 as m]\n")
            .find("+ - * /") != std::string::npos);
  CHECK(check_error(std::string(kSpan) + "select: [count() / $nope as m]\n")
            .find("unknown parameter '$nope'") != std::string::npos);
}

TEST_CASE("print fmt tables: __print_symbolic and __print_flags") {
  auto tables = b::print_symbol_tables(
      R"("state=%s flags=%s", __print_symbolic(REC->newstate, { 1, "TCP_ESTABLISHED" }, { 7, "TCP_CLOSE" }), )"
      R"(REC->prev_state & 255 ? __print_flags(REC->prev_state & 255, "|", { 0x01, "S" }, { 0x02, "D" }) : "R")");
  REQUIRE(tables.size() == 2);
  CHECK(tables[0].field == "newstate");
  CHECK_FALSE(tables[0].flags);
  CHECK(tables[0].entries == std::vector<std::pair<uint64_t, std::string>>{{1, "TCP_ESTABLISHED"}, {7, "TCP_CLOSE"}});
  CHECK(tables[1].field == "prev_state");
  CHECK(tables[1].flags);
  CHECK(tables[1].entries.size() == 2);
}

TEST_CASE("symbolic(args.F) takes the field's table from the tracepoint's print fmt") {
  auto r = check_yaml(
      "probe: tracepoint:sock:inet_sock_set_state\n"
      "select: [symbolic(args.newstate) as state, count()]\n"
      "group_by: symbolic(args.newstate) as state\n");
  const auto& q = only_query(r);
  REQUIRE(q.keys.size() == 1);
  CHECK(q.keys[0].display == b::Display::Symbolic);
  bool has_close = false;
  for (const auto& [v, name] : q.keys[0].symbols) has_close = has_close || (v == 7 && name == "TCP_CLOSE");
  CHECK(has_close);

  std::string e = check_error("probe: tracepoint:sock:inet_sock_set_state\nselect: [symbolic(args.sport)]\n");
  CHECK(e.find("'args.sport' has none") != std::string::npos);
  CHECK(e.find("args.newstate") != std::string::npos);
}

TEST_CASE("a plain ts next to other values is not a second time column") {
  auto r = check_yaml("probe: tracepoint:sched:sched_process_exec\nselect: [ts, comm]\n");
  CHECK(only_query(r).columns == std::vector<std::string>{"comm"});
}
