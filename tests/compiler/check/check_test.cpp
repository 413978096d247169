// The checker: names resolved against real tracepoint formats (fixtures), types, the SQL rule
// for select, and one test per kind of error a user can make, asserting its text and position.
#include <doctest/doctest.h>

#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;
namespace b = bpfql;

TEST_CASE("count by comm: one string key, one aggregate, columns in order") {
  auto program = check_yaml(R"(
probe: tracepoint:raw_syscalls:sys_enter
select: [comm, count()]
group_by: comm
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries.at(0);
  REQUIRE(q.keys.size() == 1);
  CHECK(q.keys[0].name == "comm");
  CHECK(q.keys[0].expr->type.is_string());
  CHECK(q.keys[0].expr->type.source == b::StringSource::Comm);
  REQUIRE(q.aggregates.size() == 1);
  CHECK(q.aggregates[0].kind == b::AggKind::Count);
  CHECK(q.columns == std::vector<std::string>{"comm", "count()"});
  CHECK_FALSE(q.streaming());
}

TEST_CASE("select \"*\": the tracepoint's fields, then the builtins comm and pid") {
  auto star = [](const char* probe) {
    auto program = check_yaml(std::string("probe: ") + probe + "\nselect: \"*\"\n");
    REQUIRE_MESSAGE(program, program.error().message);
    const auto& q = program->queries.at(0);
    CHECK(q.streaming());
    std::vector<std::string> builtins;  // the items that are builtins, by column
    for (const auto& item : q.stream)
      if (item.expr->as<b::BuiltinRef>()) builtins.push_back(item.name);
    CHECK(builtins == std::vector<std::string>{"comm", "pid"});
    return q.columns;
  };
  CHECK(star("tracepoint:syscalls:sys_enter_openat") ==
        std::vector<std::string>{"args.__syscall_nr", "args.dfd", "args.filename", "args.flags",
                                 "args.mode", "comm", "pid"});
  // Fields named like builtins stay fields: no column twice, none lost.
  CHECK(star("tracepoint:sched:sched_process_exec") ==
        std::vector<std::string>{"args.filename", "args.pid", "args.old_pid", "comm", "pid"});
  CHECK(star("tracepoint:sched:sched_wakeup") ==
        std::vector<std::string>{"args.comm", "args.pid", "args.prio", "args.target_cpu", "comm",
                                 "pid"});
}

TEST_CASE("a group_by key that is not selected comes first in the columns (BPFQL)") {
  auto program = check_yaml(R"(
BPFQL:
- select: count()
  from: tracepoint:syscalls:sys_enter_clone
  group_by: comm
  where:
    - comm is "ruby"
    - pid is 12345
  interval: 15s
  stop_after: "30s"
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries.at(0);
  CHECK(q.columns == std::vector<std::string>{"comm", "count()"});
  REQUIRE(q.filters.size() == 2);
  CHECK(q.interval_ns == 15'000'000'000ull);
  CHECK(q.stop_after_ns == 30'000'000'000ull);
}

TEST_CASE("BPFQL: an unquoted word compared with a string is a string") {
  auto program = check_yaml(
      "probe: tracepoint:raw_syscalls:sys_enter\nwhere: comm is ruby\nselect: count()\n");
  REQUIRE_MESSAGE(program, program.error().message);
  auto& filter = *program->queries[0].filters.at(0);
  auto* eq = filter.as<b::Binary>();
  REQUIRE(eq);
  CHECK(eq->op == b::BinaryOp::Eq);
  auto* word = eq->rhs->as<b::StringLiteral>();
  REQUIRE(word);
  CHECK(word->value == "ruby");
}

TEST_CASE("retval on syscalls:sys_exit_* means args.ret, a signed 64-bit value") {
  auto program = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\nwhere: retval > 0\nselect: sum(retval)\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  auto* ret = q.aggregates.at(0).arg->as<b::FieldRef>();
  REQUIRE(ret);
  CHECK(ret->name == "ret");
  CHECK(q.aggregates[0].arg->type.is_signed);
  CHECK(q.aggregates[0].arg->type.bits == 64);
}

TEST_CASE("a const char * syscall argument is a user string") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_enter_openat
where: startswith(args.filename, "/etc/")
select: count()
group_by: args.filename
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& key = program->queries[0].keys.at(0);
  CHECK(key.expr->type.source == b::StringSource::UserPtr);
  CHECK(key.expr->type.str_size == 64);
}

TEST_CASE("str() of an integer pointer reads a user string of strlen bytes") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_enter_openat
select: count()
group_by: str(args.filename, 32) as path
)");
  REQUIRE_MESSAGE(program, program.error().message);
  CHECK(program->queries[0].keys.at(0).expr->type.str_size == 32);
  CHECK(program->queries[0].columns == std::vector<std::string>{"path", "count()"});
}

TEST_CASE("a tracepoint wildcard attaches to every match, and `probe` prints as its name") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_enter_read*
select: count()
group_by: probe
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  CHECK(q.probes.size() >= 1);
  for (const auto& p : q.probes) CHECK(p.spec.rfind("tracepoint:syscalls:sys_enter_read", 0) == 0);
  CHECK(q.keys.at(0).display == b::Display::Probe);
}

TEST_CASE("a string compared with `probe` names one of the query's probes: its index") {
  auto program = check_yaml(R"(
probe: [tracepoint:syscalls:sys_enter_read, tracepoint:syscalls:sys_enter_write]
where: probe == "tracepoint:syscalls:sys_enter_write" || probe in ("syscalls:sys_enter_read")
select: count()
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& where = *program->queries[0].filters.at(0);
  const auto& either = std::get<b::Binary>(where.node);
  const auto& eq = std::get<b::Binary>(either.lhs->node);
  CHECK(std::get<b::IntLiteral>(eq.rhs->node).value == 1);
  const auto& in = std::get<b::InList>(either.rhs->node);
  CHECK(std::get<b::IntLiteral>(in.items.at(0)->node).value == 0);
  CHECK(check_error("probe: [tracepoint:syscalls:sys_enter_read, tracepoint:syscalls:sys_enter_write]\n"
                    "where: probe != \"tracepoint:syscalls:sys_enter_wrte\"\nselect: count()\n") ==
        "2:17: \"tracepoint:syscalls:sys_enter_wrte\" is not a probe of this query; did you mean "
        "'tracepoint:syscalls:sys_enter_write'?");
}

TEST_CASE("a select item's alias names a group_by key's column; a group_by alias names it in select") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_enter_write
select: [count(), args.count as sz]
group_by: args.count as size
)");
  REQUIRE_MESSAGE(program, program.error().message);
  CHECK(program->queries[0].columns == std::vector<std::string>{"count()", "sz"});
  program = check_yaml(R"(
probe: tracepoint:syscalls:sys_enter_write
select: [size, count()]
group_by: args.count as size
)");
  REQUIRE_MESSAGE(program, program.error().message);
  CHECK(program->queries[0].columns == std::vector<std::string>{"size", "count()"});
  CHECK(program->queries[0].keys.at(0).expr->text == "args.count");
}

TEST_CASE("select * over several probes streams the fields they all have, noting the rest") {
  auto program = check_yaml(R"(
probe: [tracepoint:syscalls:sys_enter_read, tracepoint:syscalls:sys_enter_close]
select: "*"
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  CHECK(q.columns == std::vector<std::string>{"args.__syscall_nr", "args.fd", "comm", "pid"});
  REQUIRE(q.notes.size() == 2);
  CHECK(q.notes[0].message ==
        "'*' leaves out args.buf: tracepoint:syscalls:sys_enter_close has no such field");
}

TEST_CASE("select * streams every field of the tracepoint, then comm and pid") {
  auto program = check_yaml("probe: tracepoint:syscalls:sys_enter_openat\nselect: '*'\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  CHECK(q.streaming());
  CHECK(q.columns == std::vector<std::string>{"args.__syscall_nr", "args.dfd", "args.filename",
                                              "args.flags", "args.mode", "comm", "pid"});
}

TEST_CASE("display functions wrap a key and keep the written text as its name") {
  auto program = check_yaml(R"(
probe: tracepoint:raw_syscalls:sys_enter
select: [syscall(args.id), count()]
group_by: syscall(args.id)
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& key = program->queries[0].keys.at(0);
  CHECK(key.display == b::Display::Syscall);
  CHECK(key.name == "syscall(args.id)");
  CHECK(key.expr->as<b::FieldRef>());
}

TEST_CASE("params become typed literals; -p overrides the default") {
  const char* yaml = R"(
params:
  target: { type: string, default: "nginx" }
  min: { type: int, default: 10 }
queries:
  - name: opens
    probe: tracepoint:syscalls:sys_enter_openat
    where: [comm == $target, args.flags > $min]
    select: count()
)";
  auto program = check_yaml(yaml, {{"target", "curl"}});
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& filters = program->queries[0].filters;
  REQUIRE(filters.size() == 2);
  auto* lit = filters[0]->as<b::Binary>()->rhs->as<b::StringLiteral>();
  REQUIRE(lit);
  CHECK(lit->value == "curl");
  auto* num = filters[1]->as<b::Binary>()->rhs->as<b::IntLiteral>();
  REQUIRE(num);
  CHECK(num->value == 10);
}

TEST_CASE("span: duration exists at the end; the key defaults to tid") {
  auto program = check_yaml(R"(
span:
  begin: tracepoint:syscalls:sys_enter_read
  end: tracepoint:syscalls:sys_exit_read
select: hist(duration)
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  REQUIRE(q.span);
  REQUIRE(q.span->begin_key.size() == 1);
  CHECK(q.span->begin_key[0]->text == "tid");
  CHECK(q.span->end_key[0]->text == "tid");
  CHECK(q.aggregates.at(0).kind == b::AggKind::Hist);
}

TEST_CASE("lhist and percentile take literal bounds") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_exit_read
select: "lhist(retval, 0, 4096, 512) as sizes, percentile(retval, 50, 99) as p"
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& aggs = program->queries[0].aggregates;
  CHECK(aggs.at(0).lhist_min == 0);
  CHECK(aggs.at(0).lhist_max == 4096);
  CHECK(aggs.at(0).lhist_step == 512);
  CHECK(aggs.at(1).percentiles == std::vector<double>{50, 99});
}

TEST_CASE("percentiles may be fractional (p99.9), nothing else may") {
  auto program = check_yaml(R"(
probe: tracepoint:syscalls:sys_exit_read
select: "percentile(retval, 50, 99.9, 99.99) as p"
)");
  REQUIRE_MESSAGE(program, program.error().message);
  CHECK(program->queries[0].aggregates.at(0).percentiles == std::vector<double>{50, 99.9, 99.99});
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\nwhere: retval > 1.5\n"
                    "select: count()\n") ==
        "2:17: '1.5': numbers are integers; a fractional number is allowed only as a "
        "percentile, as in percentile(duration, 99.9)");
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\n"
                    "select: percentile(retval, 100.5)\n") ==
        "2:28: a percentile must be above 0 and at most 100");
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\n"
                    "select: percentile(retval, 0.0)\n") ==
        "2:28: a percentile must be above 0 and at most 100");
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\n"
                    "select: percentile(retval, 99, 99.0)\n") ==
        "2:32: percentile 99.0 is asked twice");
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\n"
                    "select: sum(retval * 1.5)\n") ==
        "2:22: '1.5': numbers are integers; a fractional number is allowed only as a "
        "percentile, as in percentile(duration, 99.9)");
}

// Errors: each names the position of what is wrong and suggests the nearest valid name.

TEST_CASE("error: unknown field, with did-you-mean (the spec's example)") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_openat\nwhere: args.filname == "
                    "\"x\"\nselect: count()\n") ==
        "2:8: unknown field 'filname' in tracepoint syscalls:sys_enter_openat; did you mean "
        "'filename'?");
}

TEST_CASE("error: unknown bare name") {
  CHECK(
      check_error(
          "probe: tracepoint:raw_syscalls:sys_enter\nwhere: pidd == 1\nselect: count()\n") ==
      "2:8: unknown name 'pidd' for probe tracepoint:raw_syscalls:sys_enter; did you mean 'pid'?");
}

TEST_CASE("error: unknown function") {
  CHECK(
      check_error(
          "probe: tracepoint:raw_syscalls:sys_enter\nselect: count()\ngroup_by: strr(args.id)\n") ==
      "3:11: unknown function 'strr'; did you mean 'str'?");
}

TEST_CASE("error: unknown tracepoint, with the nearest one") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_opnat\nselect: count()\n") ==
        "1:28: unknown tracepoint 'syscalls:sys_enter_opnat'; did you mean "
        "'syscalls:sys_enter_openat'?");
}

TEST_CASE("error: unknown probe type") {
  CHECK(check_error("probe: tracepiont:syscalls:sys_enter_openat\nselect: count()\n") ==
        "1:8: unknown probe type 'tracepiont'; did you mean 'tracepoint'?");
}

TEST_CASE("error: comparing a string with a number") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nwhere: comm == 42\nselect: count()\n") ==
        "2:8: cannot compare string 'comm' with integer '42'");
}

TEST_CASE("a plain char * field is an address: compared with a string, the error says str()") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_read\nwhere: args.buf == \"x\"\n"
                    "select: count()\n") ==
        "2:8: cannot compare string '\"x\"' with integer 'args.buf' (a 'char *' address); read "
        "the string with 'str(args.buf)'");
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_read\nwhere: str(args.buf) == \"x\"\n"
                    "select: count()\n") == "");
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_write\nwhere: args.buf == \"x\"\n"
                    "select: count()\n") == "");  // const char *: a string already
}

TEST_CASE("error: sum() of a string") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nselect: sum(comm)\n") ==
        "2:13: sum() needs an integer, but 'comm' is a string");
}

TEST_CASE("error: retval on an entry probe") {
  CHECK(check_error(
            "probe: tracepoint:syscalls:sys_enter_read\nwhere: retval > 0\nselect: count()\n") ==
        "2:8: 'retval' exists only on return probes (kretprobe, uretprobe, syscalls:sys_exit_*); "
        "'tracepoint:syscalls:sys_enter_read' is an entry probe");
}

TEST_CASE("error: duration outside a span") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: sum(duration)\n") ==
        "2:13: 'duration' exists only in span queries (at the end probe)");
}

TEST_CASE("error: an aggregate in where") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nwhere: count() > 1\nselect: count()\n") ==
        "2:8: aggregate 'count()' cannot be used in 'where': filters run before events are "
        "aggregated");
}

TEST_CASE("error: a plain value next to aggregates must be a group_by key") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nselect: [pid, count()]\ngroup_by: comm\n") ==
        "2:10: 'pid' is neither aggregated nor a group_by key; add it to group_by or aggregate it "
        "(as in SQL)");
}

TEST_CASE("error: group_by without an aggregate") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nselect: pid\ngroup_by: comm\n") ==
        "3:11: group_by needs an aggregate in select (for example count())");
}

TEST_CASE("error: order_by names no column") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nselect: count() as n\ngroup_by: "
                    "comm\norder_by: nn desc\n") ==
        "4:11: order_by names no column: 'nn'; did you mean 'n'?");
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nselect: count()\norder_by: count\n") ==
        "3:11: order_by names no column: 'count'; did you mean 'count()'?");
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nselect: [count(), sum(id) as s]\n"
                    "order_by: total\n") ==
        "3:11: order_by names no column: 'total'; the columns are 'count()', 's'");
}

TEST_CASE("error: unknown parameter") {
  CHECK(check_error("params:\n  target: {type: string, default: x}\nqueries:\n  - probe: "
                    "tracepoint:raw_syscalls:sys_enter\n"
                    "    where: comm == $targt\n    select: count()\n") ==
        "5:20: unknown parameter '$targt'; did you mean 'target'?");
}

TEST_CASE("error: arg0 on a tracepoint") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nwhere: arg0 == 1\nselect: count()\n") ==
        "2:8: 'arg0' is not available on 'tracepoint:raw_syscalls:sys_enter'; tracepoints have "
        "fields: use args.NAME");
}

TEST_CASE("error: ordering strings") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nwhere: comm < \"a\"\nselect: count()\n") ==
        "2:8: cannot order strings with '<' in 'comm < \"a\"'; strings support ==, !=, in, "
        "startswith() and contains()");
}

TEST_CASE("error: a string literal longer than comm, whose 16 bytes strlen does not change") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nwhere: comm == "
                    "\"a-name-longer-than-sixteen\"\nselect: count()\n") ==
        "2:16: \"a-name-longer-than-sixteen\" is 26 bytes, but 'comm' holds at most 15 (`strlen` "
        "does not change comm's 16 bytes), so the comparison can never be true");
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nwhere: startswith(comm, "
                    "\"abcdefghijklmnopq\")\nselect: count()\n") ==
        "2:25: \"abcdefghijklmnopq\" is longer than the 15 bytes 'comm' holds (`strlen` does not "
        "change comm's 16 bytes), so startswith() can never be true");
}

TEST_CASE("error: a string literal longer than a char[N] field, whose N strlen does not change") {
  CHECK(check_error("probe: tracepoint:sched:sched_switch\nwhere: args.prev_comm in (\"a\", "
                    "\"abcdefghijklmnopqr\")\nselect: count()\n") ==
        "2:32: \"abcdefghijklmnopqr\" is 18 bytes, but 'args.prev_comm' holds at most 15 "
        "(`strlen` does not change a char[16] field), so the comparison can never be true");
}

TEST_CASE("error: a string literal longer than the bytes read of a pointer: raise strlen") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_openat\nwhere: contains(args.filename, "
                    "\"abcdefghijkl\")\nselect: count()\nstrlen: 8\n") ==
        "2:32: \"abcdefghijkl\" is longer than the 7 bytes 'args.filename' holds (raise `strlen` "
        "to read more)");
}

TEST_CASE("error: lhist bounds") {
  CHECK(
      check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, 10, 0, 1)\n") ==
      "2:27: the lhist() maximum must be above the minimum");
  CHECK(
      check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, 0, 10, 0)\n") ==
      "2:30: the lhist() step must be positive");
}

TEST_CASE("error: kstack only as a key or value") {
  CHECK(check_error(
            "probe: tracepoint:raw_syscalls:sys_enter\nwhere: kstack == 1\nselect: count()\n") ==
        "2:8: 'kstack' can only be a group_by key or a selected value");
}

TEST_CASE("error: a where clause that is not a condition") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nwhere: comm\nselect: count()\n") ==
        "2:8: a where clause must be a condition, but 'comm' is a string");
}

TEST_CASE("error: USDT probe that the binary does not have") {
  std::string e =
      check_error("probe: usdt:/usr/bin/python3.11:python:function__entri\nselect: count()\n");
  CHECK(e.find("no USDT probe 'python:function__entri'") != std::string::npos);
  CHECK(e.find("did you mean 'python:function__entry'?") != std::string::npos);
}

TEST_CASE("error: a USDT probe under the wrong provider suggests the one with that name") {
  std::string e = check_error("probe: usdt:/usr/bin/python3.11:py:gc__start\nselect: count()\n");
  CHECK(e.find("no USDT probe 'py:gc__start'") != std::string::npos);
  CHECK(e.find("did you mean 'python:gc__start'?") != std::string::npos);
  e = check_error("probe: usdt:/usr/bin/python3.11:nothing:like_this_at_all\nselect: count()\n");
  CHECK(e.find("; it has python:") != std::string::npos);  // few probes: all listed, or a count
}

TEST_CASE("error: uprobe on a symbol the binary lacks") {
  std::string e = check_error("probe: uprobe:c:no_such_function_here\nselect: count()\n");
  CHECK(e.find("symbol 'no_such_function_here' is not in") != std::string::npos);
}

TEST_CASE("BPFQL: the unquoted word is everything after the operator, dashes included") {
  auto program = check_yaml("BPFQL:\n- select: count()\n  from: tracepoint:raw_syscalls:sys_enter\n"
                            "  where:\n    - comm is php-fpm\n    - comm is not systemd-journal\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& filters = program->queries[0].filters;
  REQUIRE(filters.size() == 2);
  auto* first = filters[0]->as<b::Binary>();
  REQUIRE(first);
  CHECK(first->op == b::BinaryOp::Eq);
  CHECK(first->rhs->as<b::StringLiteral>()->value == "php-fpm");
  auto* second = filters[1]->as<b::Binary>();
  CHECK(second->op == b::BinaryOp::Ne);
  CHECK(second->rhs->as<b::StringLiteral>()->value == "systemd-journal");
}

TEST_CASE("a word clause does not hide a real error") {
  CHECK(check_error("probe: tracepoint:raw_syscalls:sys_enter\nwhere: pid is php-fpm\nselect: count()\n") ==
        "2:15: unknown name 'php' for probe tracepoint:raw_syscalls:sys_enter; did you mean 'pid'?");
}

TEST_CASE("order_by without a direction: an aggregate sorts descending, a key ascending") {
  auto descending = [](const std::string& order) {
    auto program = check_yaml(
        "probe: tracepoint:raw_syscalls:sys_enter\nselect: [comm, count() as n]\ngroup_by: "
        "comm\norder_by: " + order + "\n");
    REQUIRE(program.has_value());
    return program->queries[0].descending;
  };
  CHECK(descending("n"));
  CHECK_FALSE(descending("comm"));
  CHECK(descending("comm desc"));
  CHECK_FALSE(descending("n asc"));
}
