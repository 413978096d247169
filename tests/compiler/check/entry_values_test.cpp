// `entry.EXPR` at a return probe: where it is allowed, what the checker stores (each value
// once), its errors, and the generated pairing of an entry with its return.
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/diagnostics.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

bpfql::Plan plan_of(const std::string& yaml) {
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  return *plan;
}

size_t at(const std::string& c, const std::string& text) {
  size_t pos = c.find(text);
  INFO("looking for: " << text << "\nin:\n" << c);
  REQUIRE(pos != std::string::npos);
  return pos;
}

const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

}  // namespace

TEST_CASE("entry.EXPR: typed at the function's entry, each distinct value stored once") {
  auto program = check_yaml(
      "probe: uretprobe:c:malloc\nwhere: entry.arg0 > 0\n"
      "select: [hist(entry.arg0), max(ts - entry.ts), sum(entry.arg0 * 2), count()]\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  REQUIRE(q.entry_values.size() == 2);
  CHECK(q.entry_values[0]->text == "arg0");
  CHECK(q.entry_values[1]->text == "ts");
  CHECK(q.entry_values[0]->type.is_integer());
  // In a span's begin capture too (memleak's bytes), and in an item's own condition.
  auto span = check_yaml(
      "span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
      "  key: {begin: retval, end: arg0}\n  begin_where: [retval != 0, entry.arg0 < 65536]\n"
      "  report: open\nselect: [count(), sum(begin.entry.arg0) as bytes]\n");
  REQUIRE_MESSAGE(span, span.error().message);
  REQUIRE(span->queries[0].entry_values.size() == 1);
  CHECK(span->queries[0].entry_values[0]->text == "arg0");
}

TEST_CASE("entry.EXPR anywhere but a return probe is an error at the name, saying why") {
  std::string yaml = "probe: uprobe:c:malloc\nselect: sum(entry.arg0)\n";
  CHECK(check_error(yaml) ==
        std::string("2:13: 'entry.arg0': 'entry.' names a value of the function's entry, read "
                    "back at its return, so it exists only at a return probe (uretprobe, "
                    "kretprobe); 'uprobe:") +
            kLibc + ":malloc' is not one (here, read 'arg0' itself)");
  auto program = check_yaml(yaml);
  REQUIRE_FALSE(program);
  CHECK(bpfql::format_diagnostic(program.error(), yaml)
            .find("\n  select: sum(entry.arg0)\n"
                  "              ^\n") != std::string::npos);
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: sum(entry.arg0)\n")
            .starts_with("2:13: 'entry.arg0': 'entry.' names a value of the function's entry"));
  // At a span's end that is an entry probe (free), with the begin a return: the end's own.
  CHECK(check_error("span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                    "  key: {begin: retval, end: arg0}\nselect: sum(entry.arg0)\n")
            .starts_with("5:13: 'entry.arg0': 'entry.' names a value of the function's entry"));
  // A list with one entry probe among return probes.
  CHECK(check_error("probe: [uretprobe:c:malloc, uprobe:c:free]\nselect: sum(entry.arg0)\n")
            .starts_with("2:13: 'entry.arg0': 'entry.'"));
}

TEST_CASE("entry.EXPR: what the entry cannot give is an error") {
  // Checked at the entry probe: retval does not exist there.
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(entry.retval)\n") ==
        std::string("2:19: 'retval' exists only on return probes (kretprobe, uretprobe, "
                    "syscalls:sys_exit_*); 'uprobe:") +
            kLibc + ":malloc' is an entry probe");
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(entry.entry.arg0)\n") ==
        "2:13: 'entry.entry.arg0': an entry value is read at the entry itself, where there is no "
        "entry. of its own; write 'entry.arg0'");
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(entry.duration)\n") ==
        "2:13: 'entry.duration': the entry of a call has no duration; at the return, 'ts - "
        "entry.ts' is the time the call took");
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(entry.arg6)\n") ==
        "2:19: 'arg6': function probes offer arg0..arg5");
  CHECK(check_error(
            "probe: uretprobe:c:malloc\nselect: [entry.comm, count()]\ngroup_by: entry.comm\n")
            .starts_with("3:11: 'entry.comm': an entry value is a number kept per call in flight "
                         "(entry.arg0, entry.ts, entry.pid), and 'comm' is a string"));
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: count()\ngroup_by: entry.str(arg0)\n")
            .starts_with("3:11: 'entry.str(arg0)': an entry value is a number"));
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: count()\ngroup_by: entry.probe\n") ==
        "3:17: 'entry.probe': 'probe' at the return names the same function as at its entry; "
        "read it there");
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: count()\nwhere: entry.begin.arg0 > 1\n")
            .starts_with("3:14: 'begin.arg0': 'begin.' names a value of a span's begin"));
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: count()\nwhere: entry. > 1\n") ==
        "3:14: expected an expression after 'entry.' (such as entry.arg0)");
  // At most kMaxEntryValues distinct values.
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: [sum(entry.arg0), sum(entry.arg1), "
                    "sum(entry.arg2), sum(entry.arg3), sum(entry.arg4), sum(entry.arg5), "
                    "sum(entry.ts), sum(entry.pid), sum(entry.tid)]\n")
            .ends_with("'entry.tid': a query keeps at most 8 distinct entry values per call in "
                       "flight"));
  // A return that both ends and begins a span would claim the one record twice.
  CHECK(check_error("span:\n  begin: uretprobe:c:malloc\n  end: uretprobe:c:malloc\n"
                    "select: sum(entry.arg0)\n")
            .starts_with("4:13: 'entry.arg0': 'uretprobe:"));
}

TEST_CASE("arg0.. at a return probe is an error whose hint is entry.arg0") {
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(arg0)\n") ==
        std::string("2:13: 'arg0' does not exist at the return probe 'uretprobe:") + kLibc +
            ":malloc': the argument registers are overwritten by the time the function returns; "
            "did you mean 'entry.arg0' (the value it had at the call's entry)?");
  // ... and what it suggests checks.
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: sum(entry.arg0)\n") == "");
}

TEST_CASE("entry.EXPR: the entry program stores under (thread, sp), the return reads sp - 8") {
  bpfql::Plan plan = plan_of("probe: uretprobe:c:malloc\nselect: [hist(entry.arg0), count()]\n");
  const std::string& c = plan.c_source;
  size_t entry = at(c, "entry values: uprobe:" + std::string(kLibc) + ":malloc */\nint q0_e0(");
  size_t ret = at(c, "int q0_p0(");
  CHECK(entry < ret);
  CHECK(at(c, "ekey.sp = ctx->sp;") < ret);
  size_t lookup = at(c, "ekey.sp = ctx->sp - 8;");
  CHECK(lookup > ret);
  // A missing record: dropped, nothing recorded; the record is copied, then deleted.
  CHECK(at(c, "if (!ep) {") > lookup);
  CHECK(at(c, "struct q0_entry_val ent = *ep;\n  q0_entry.delete(&ekey);") > lookup);
  CHECK(c.find("BPF_HASH(q0_entry, struct q0_entry_key, struct q0_entry_val, 10240)") !=
        std::string::npos);
  // The entry program attaches first, at the function's entry.
  const auto& attaches = plan.queries[0].attaches;
  REQUIRE(attaches.size() == 2);
  CHECK(attaches[0].kind == bpfql::ProbeKind::Uprobe);
  CHECK(attaches[0].function == "q0_e0");
  CHECK(attaches[0].symbol == "malloc");
  CHECK(attaches[1].kind == bpfql::ProbeKind::Uretprobe);
  // A query without entry values has no entry program or map.
  bpfql::Plan none = plan_of("probe: uretprobe:c:malloc\nselect: count()\n");
  CHECK(none.c_source.find("q0_entry") == std::string::npos);
  CHECK(none.queries[0].attaches.size() == 1);
}

TEST_CASE("entry.EXPR in a span's begin: the begin that lacks its record stores nothing") {
  std::string c = plan_of(
                      "span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                      "  key: {begin: retval, end: arg0}\n  report: open\n"
                      "select: [count(), sum(begin.entry.arg0) as bytes]\n")
                      .c_source;
  size_t begin = at(c, "int q0_b0(");
  size_t missing = at(c, "if (!ep) {");
  CHECK(missing > begin);
  CHECK(at(c, "q0_start.update(") > missing);
  CHECK(at(c, "sv.begin_entry_arg0 = ent.v0;") > missing);
  // free() reads no entry value: no lookup there.
  size_t end = at(c, "int q0_p0(");
  CHECK(c.find("ekey", end) == std::string::npos);
}

TEST_CASE("entry.EXPR at several return probes: one entry program, at each function's entry") {
  bpfql::Plan plan = plan_of(
      "probe: [uretprobe:c:malloc, uretprobe:c:calloc]\n"
      "select: [probe, sum(entry.arg0)]\ngroup_by: probe\n");
  const auto& attaches = plan.queries[0].attaches;
  REQUIRE(attaches.size() == 4);
  // The entry programs first (the same program at both entries), then the returns.
  CHECK(attaches[0].kind == bpfql::ProbeKind::Uprobe);
  CHECK(attaches[0].symbol == "malloc");
  CHECK(attaches[1].kind == bpfql::ProbeKind::Uprobe);
  CHECK(attaches[1].symbol == "calloc");
  CHECK(attaches[0].function == attaches[1].function);
  CHECK(attaches[2].kind == bpfql::ProbeKind::Uretprobe);
  CHECK(attaches[3].kind == bpfql::ProbeKind::Uretprobe);
}
