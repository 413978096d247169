// Fusion (compiler/codegen/fusion.h): queries on the same tracepoint become one program,
// each body in turn with its own filter and maps; and `probe` over a wildcard of tracepoints
// comes from the attach cookie, so every probe shares one function.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/fusion.h"
#include "compiler/syntax/query.h"
#include "compiler/syscall_names.h"
#include "support/check_helpers.h"

using namespace bpfql;

namespace {

Plan plan_for(const std::string& yaml) {
  auto program = testing::check_yaml(yaml, {}, {});
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
  return *plan;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

std::string query(const std::string& name, const std::string& probe, const std::string& rest) {
  return "  - name: " + name + "\n    probe: " + probe + "\n" + rest;
}

const std::string kEnter = "tracepoint:raw_syscalls:sys_enter";

}  // namespace

namespace {

const std::string kExit = "tracepoint:raw_syscalls:sys_exit";

const PlanAttach& only_attach(const Plan& plan, size_t query) {
  REQUIRE(plan.queries.at(query).attaches.size() == 1);
  return plan.queries[query].attaches[0];
}

Plan plan_with(const FixtureCatalog& catalog, const std::string& yaml) {
  auto file = load_query_text("q.yml", yaml);
  REQUIRE_MESSAGE(file.has_value(), (file ? "" : file.error().message));
  auto program = check_file(*file, catalog, {});
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
  return *plan;
}

}  // namespace

TEST_CASE("queries on one tracepoint: one program runs every body, each with its own filter") {
  Plan plan = plan_for("queries:\n" +
                       query("a", kEnter, "    where: pid == 7\n    select: count()\n") +
                       query("b", kEnter, "    select: count()\n    group_by: comm\n") +
                       query("c", kEnter, "    where: uid == 0\n    select: count()\n"));
  REQUIRE(plan.queries.size() == 3);
  std::set<std::string> functions;
  for (const auto& q : plan.queries) {
    REQUIRE(q.attaches.size() == 1);
    functions.insert(q.attaches[0].function);
    CHECK(q.attaches[0].raw_tracepoint_ok);  // none reads the record
  }
  REQUIRE(functions.size() == 1);
  const std::string name = *functions.begin();
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    // The fused one only, as raw_syscalls:sys_enter's raw tracepoint (fusion.h).
    CHECK(count_of(c, "(struct bpfql_raw_sys_enter *ctx)") == 1);
    CHECK((c.find("int " + name + "(struct bpfql_raw_sys_enter *ctx)") != std::string::npos ||
           c.find("BPFQL_FUNCTION(" + name + ")(struct bpfql_raw_sys_enter *ctx)") !=
               std::string::npos));
    // Each filter leaves its own body only.
    CHECK(count_of(c, "goto " + name + "_0_end;") >= 1);
    CHECK(count_of(c, "goto " + name + "_2_end;") >= 1);
    CHECK(count_of(c, "q0_drop") >= 1);
    CHECK(count_of(c, "q1_drop") >= 1);
  }
  // Drops and outputs stay per query.
  CHECK(plan.queries[0].dropped_map != plan.queries[1].dropped_map);
  CHECK(plan.queries[0].value_map != plan.queries[2].value_map);
}

TEST_CASE("a fused program is a raw tracepoint only if no body reads the record, or on "
          "raw_syscalls where every field it reads is in the raw tracepoint's arguments") {
  Plan sched = plan_for(
      "queries:\n" + query("a", "tracepoint:sched:sched_switch", "    select: count()\n") +
      query("b", "tracepoint:sched:sched_switch", "    where: args.prev_pid == 0\n    select: count()\n"));
  CHECK(sched.queries[0].attaches[0].function == sched.queries[1].attaches[0].function);
  CHECK_FALSE(sched.queries[0].attaches[0].raw_tracepoint_ok);
  CHECK_FALSE(sched.queries[1].attaches[0].raw_tracepoint_ok);
  // The number at sys_enter is the raw tracepoint's second argument.
  Plan number = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                         query("b", kEnter, "    where: args.id == 0\n    select: count()\n"));
  REQUIRE(number.queries.size() == 2);
  CHECK(number.queries[0].attaches[0].function == number.queries[1].attaches[0].function);
  for (const auto& q : number.queries) {
    CHECK(q.attaches[0].raw_tracepoint_ok);
    CHECK(q.attaches[0].raw_record);  // no fallback to the ordinary tracepoint
  }
  for (const std::string& c : {number.c_source, number.c_plain}) {
    CHECK(count_of(c, "s64 args_id = ctx->id;") == 1);
    CHECK(c.find("args->") == std::string::npos);
  }
  // raw_syscalls' args[]: a 32-bit call's arguments are in other registers, so the record stays.
  Plan arguments = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                            query("b", kEnter, "    where: args.args[0] == 3\n    select: count()\n"));
  for (const auto& q : arguments.queries) {
    CHECK_FALSE(q.attaches[0].raw_tracepoint_ok);
    CHECK_FALSE(q.attaches[0].raw_record);
  }
  CHECK(arguments.c_plain.find("bpfql_raw_sys_enter") == std::string::npos);
}

TEST_CASE("a raw_syscalls query alone that reads the number or the result runs as the raw "
          "tracepoint, reading regs->orig_ax for the number at sys_exit") {
  Plan plan = plan_for("queries:\n" +
                       query("a", kExit, "    where: args.ret < 0\n    select: count()\n"
                                         "    group_by: syscall(args.id) as call\n"));
  const PlanAttach& a = only_attach(plan, 0);
  CHECK(a.raw_tracepoint_ok);
  CHECK(a.raw_record);
  CHECK(a.tracepoint == "raw_syscalls:sys_exit");
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(c, "(struct bpfql_raw_sys_exit *ctx)") == 1);
    CHECK(count_of(c, "s64 args_ret = ctx->ret;") == 1);
    CHECK(count_of(c, "u64 bpfql_exit_nr = bpfql_syscall_reg(ctx->regs, 120);") == 1);  // orig_ax
    // The number is read after the filter on the result: only for the failed calls.
    CHECK(c.find("args_ret < 0") < c.find("bpfql_exit_nr = "));
  }
  // Without pt_regs in the kernel's BTF, it keeps the record.
  FixtureCatalog no_regs;
  no_regs.set_kernel_member_offset("pt_regs", "orig_ax", std::nullopt);
  Plan blind = plan_with(no_regs, "queries:\n" +
                                      query("a", kExit, "    where: args.ret < 0\n    select: count()\n"
                                                        "    group_by: syscall(args.id) as call\n"));
  CHECK_FALSE(only_attach(blind, 0).raw_tracepoint_ok);
  CHECK(blind.c_plain.find("args->id") != std::string::npos);
}

TEST_CASE("the registers are looked up only where a body may read one: not at raw_syscalls:sys_enter") {
  auto has_regs = [](const std::string& yaml) {
    auto program = testing::check_yaml(yaml);
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    return program->queries[0].syscall_regs.has_value();
  };
  // The number at sys_enter is the raw tracepoint's own argument: no BTF needed for it.
  CHECK_FALSE(has_regs("queries:\n" + query("a", kEnter, "    select: count()\n    group_by: syscall(args.id) as call\n")));
  CHECK(has_regs("queries:\n" + query("a", kExit, "    select: count()\n")));
  CHECK(has_regs("queries:\n" + query("a", "tracepoint:syscalls:sys_enter_read", "    select: count()\n")));
  // Without pt_regs, what reads no register still runs raw: the number at sys_enter, the result
  // at sys_exit, alone and fused.
  FixtureCatalog no_regs;
  no_regs.set_kernel_member_offset("pt_regs", "orig_ax", std::nullopt);
  Plan enter = plan_with(no_regs, "queries:\n" + query("a", kEnter, "    select: count()\n    group_by: syscall(args.id) as call\n"));
  CHECK(only_attach(enter, 0).raw_record);
  CHECK(count_of(enter.c_plain, "ctx->id") >= 1);
  Plan exits = plan_with(no_regs, "queries:\n" + query("a", kExit, "    where: args.ret < 0\n    select: count()\n") +
                                      query("b", kExit, "    select: sum(args.ret)\n    group_by: comm\n"));
  CHECK(only_attach(exits, 0).function == only_attach(exits, 1).function);
  CHECK(only_attach(exits, 0).raw_record);
  CHECK(exits.c_plain.find("bpfql_exit_nr") == std::string::npos);
}

TEST_CASE("a helper read by two bodies, one of them before any filter, is read once") {
  Plan read_first = plan_for(
      "queries:\n" + query("a", kEnter, "    select: count()\n    group_by: tid\n") +
      query("b", kEnter, "    where: pid == 7\n    select: count()\n"));
  CHECK(count_of(read_first.c_plain, "= bpf_get_current_pid_tgid();") == 1);
  // Both read it only after a filter: each keeps its own read (a read the other's filter would
  // have spared is not moved before it).
  Plan after_filters = plan_for(
      "queries:\n" +
      query("a", kEnter, "    where: uid == 7\n    select: count()\n    group_by: tid\n") +
      query("b", kEnter, "    where: [cpu == 0, pid == 7]\n    select: count()\n"));
  CHECK(count_of(after_filters.c_plain, "= bpf_get_current_pid_tgid();") == 2);
}

TEST_CASE("queries on different tracepoints keep their own programs") {
  Plan plan = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                       query("b", "tracepoint:raw_syscalls:sys_exit", "    select: count()\n"));
  CHECK(plan.queries[0].attaches[0].function != plan.queries[1].attaches[0].function);
  CHECK(plan.c_plain.find("fused") == std::string::npos);
}

TEST_CASE("a wildcard's probe builtin comes from the attach cookie: one function for every probe") {
  Plan plan = plan_for(
      "name: w\nprobe: [tracepoint:sched:sched_switch, tracepoint:sched:sched_wakeup, "
      "tracepoint:sched:sched_process_fork]\nselect: count()\ngroup_by: probe\n");
  const auto& attaches = plan.queries.at(0).attaches;
  REQUIRE(attaches.size() == 3);
  for (size_t i = 0; i < attaches.size(); ++i) {
    CHECK(attaches[i].function == attaches[0].function);
    CHECK(attaches[i].attach_cookie);
    CHECK(attaches[i].probe_index == i);
    CHECK_FALSE(attaches[i].raw_tracepoint_ok);  // a raw tracepoint's cookie needs Linux 6.10
  }
  CHECK(count_of(plan.c_plain, "bpf_get_attach_cookie(args)") == 1);
  // A cookie is the probe's index in its own query: such a program is never fused.
  Plan two = plan_for("queries:\n" +
                      query("w", "[tracepoint:sched:sched_switch, tracepoint:sched:sched_wakeup]",
                            "    select: count()\n    group_by: probe\n") +
                      query("s", "tracepoint:sched:sched_wakeup", "    select: count()\n"));
  CHECK(two.queries[0].attaches[1].function != two.queries[1].attaches[0].function);
}

TEST_CASE("a span that ends and begins at one probe keeps its program: fused, its begin was lost") {
  // offcputime beside another query of sched_switch: the fused body held the span's end alone,
  // so no span ever began and offcputime printed nothing.
  Plan plan = plan_for(
      "queries:\n"
      "  - name: offcpu\n"
      "    span:\n"
      "      begin: tracepoint:sched:sched_switch\n"
      "      end: tracepoint:sched:sched_switch\n"
      "      key: {begin: args.prev_pid, end: args.next_pid}\n"
      "    select: sum(duration)\n" +
      query("switches", "tracepoint:sched:sched_switch", "    select: count()\n") +
      query("more", "tracepoint:sched:sched_switch", "    where: cpu == 0\n    select: count()\n"));
  REQUIRE(plan.queries.size() == 3);
  REQUIRE(plan.queries[0].attaches.size() == 1);
  CHECK(plan.queries[0].attaches[0].function == "q0_p0");  // the program that ends, then begins
  CHECK(plan.queries[1].attaches[0].function == plan.queries[2].attaches[0].function);
  CHECK(plan.queries[1].attaches[0].function != "q0_p0");
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    size_t end = c.find("q0_p0_end(args);");
    REQUIRE(end != std::string::npos);
    CHECK(c.find("q0_p0_begin(args);", end) != std::string::npos);
  }
}


TEST_CASE("system call numbers for syscalls:* names: only where the entry point has the name") {
  CHECK(native_syscall_number("read") == 0);
  CHECK(native_syscall_number("close") == 3);
  CHECK(native_syscall_number("openat") == 257);
  CHECK(native_syscall_number("getppid") == 110);
  // Number 4 is `stat` in <asm/unistd_64.h> but runs sys_newstat: an event sys_enter_stat would
  // be the 32-bit call's.
  CHECK_FALSE(native_syscall_number("stat"));
  CHECK_FALSE(native_syscall_number("newstat"));
  CHECK_FALSE(native_syscall_number("sendfile"));
  CHECK_FALSE(native_syscall_number("set_thread_area"));  // 205 is not implemented for 64-bit
  CHECK_FALSE(native_syscall_number("uselib"));
  CHECK_FALSE(native_syscall_number("no_such_call"));
}

TEST_CASE("a syscalls:* body beside a raw_syscalls query runs in its program, behind its number "
          "and the 32-bit test") {
  Plan plan = plan_for("queries:\n" + query("a", kExit, "    where: args.ret < 0\n    select: count()\n") +
                       query("b", "tracepoint:syscalls:sys_exit_read",
                             "    where: retval > 0\n    select: sum(retval)\n    group_by: comm\n") +
                       query("c", kEnter, "    select: count()\n    group_by: comm\n") +
                       query("d", "tracepoint:syscalls:sys_enter_openat",
                             "    select: count()\n    group_by: str(args.filename) as file\n"));
  const PlanAttach& a = only_attach(plan, 0);
  const PlanAttach& b = only_attach(plan, 1);
  const PlanAttach& c = only_attach(plan, 2);
  const PlanAttach& d = only_attach(plan, 3);
  CHECK(b.function == a.function);
  CHECK(b.tracepoint == "raw_syscalls:sys_exit");  // attached there, not to syscalls:sys_exit_read
  CHECK(b.spec == "tracepoint:syscalls:sys_exit_read");  // still named as written
  CHECK(d.function == c.function);
  CHECK(d.tracepoint == "raw_syscalls:sys_enter");
  // Both groups run as raw_syscalls' raw tracepoints, reading registers where records held fields.
  for (const PlanAttach* moved : {&a, &b, &c, &d}) {
    CHECK(moved->raw_tracepoint_ok);
    CHECK(moved->raw_record);
  }
  for (const std::string& text : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(text, "if (bpfql_exit_nr != 0) goto") == 1);  // read
    CHECK(count_of(text, "if (ctx->id != 257) goto") == 1);      // openat
    // The number at sys_exit, read once at the top for both bodies (regs->orig_ax).
    CHECK(count_of(text, "u64 bpfql_exit_nr = bpfql_syscall_reg(ctx->regs, 120);") == 1);
    // openat's filename: its second argument, regs->si.
    CHECK(count_of(text, "u64 bpfql_arg1 = bpfql_syscall_reg(ctx->regs, 104);") == 1);
    CHECK(count_of(text, "bpf_get_current_task_btf() + 16);") == 2);  // thread_info.status
    CHECK(count_of(text, "if (bpfql_status & 0x0002) goto") == 2);
    CHECK(text.find("bpfql_record") == std::string::npos);
    CHECK(text.find("args->") == std::string::npos);
    CHECK(count_of(text, "int q1_p0(") + count_of(text, "BPFQL_FUNCTION(q1_p0)") == 0);  // no program of its own
  }
  // Where BTF does not give pt_regs, the bodies move all the same, reading the record.
  FixtureCatalog no_regs;
  no_regs.set_kernel_member_offset("pt_regs", "di", std::nullopt);
  Plan records = plan_with(no_regs, "queries:\n" + query("a", kExit, "    where: args.ret < 0\n    select: count()\n") +
                       query("b", "tracepoint:syscalls:sys_exit_read",
                             "    where: retval > 0\n    select: sum(retval)\n    group_by: comm\n"));
  CHECK(only_attach(records, 1).function == only_attach(records, 0).function);
  CHECK_FALSE(only_attach(records, 1).raw_tracepoint_ok);
  for (const std::string& text : {records.c_source, records.c_plain}) {
    CHECK(count_of(text, "if (args->id != 0) goto") == 1);
    CHECK(count_of(text, "struct tp_syscalls_sys_exit_read *args = (struct tp_syscalls_sys_exit_read *)bpfql_record;") == 1);
  }
}

TEST_CASE("moved bodies of one system call read its TS_COMPAT bit once; of another, their own") {
  Plan plan = plan_for("queries:\n" + query("a", kExit, "    select: count()\n") +
                       query("b", "tracepoint:syscalls:sys_exit_read", "    select: sum(retval)\n") +
                       query("c", "tracepoint:syscalls:sys_exit_read",
                             "    where: retval > 0\n    select: count()\n") +
                       query("d", "tracepoint:syscalls:sys_exit_close", "    select: count()\n"));
  for (size_t q = 1; q < 4; ++q) CHECK(only_attach(plan, q).function == only_attach(plan, 0).function);
  for (const std::string& text : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(text, "s32 bpfql_compat = -1;") == 1);
    // read's two bodies: the first to pass the number reads the bit, both test what it kept.
    CHECK(count_of(text, "if (bpfql_compat < 0) {") == 2);
    CHECK(count_of(text, "if (bpfql_compat) goto") == 2);
    // close's one body reads its own, as before.
    CHECK(count_of(text, "if (bpfql_status & 0x0002) goto") == 1);
    CHECK(count_of(text, "bpf_get_current_task_btf() + 16);") == 3);
  }
  // With no system call shared, no kept bit.
  Plan apart = plan_for("queries:\n" + query("a", kExit, "    select: count()\n") +
                        query("b", "tracepoint:syscalls:sys_exit_read", "    select: sum(retval)\n") +
                        query("d", "tracepoint:syscalls:sys_exit_close", "    select: count()\n"));
  CHECK(apart.c_source.find("bpfql_compat") == std::string::npos);
}

TEST_CASE("moved bodies of one system call read comm once; a body on every call keeps its own read") {
  Plan plan = plan_for(
      "queries:\n" + query("a", kExit, "    where: args.ret < 0\n    select: count()\n    group_by: comm\n") +
      query("b", "tracepoint:syscalls:sys_exit_read", "    select: sum(retval)\n    group_by: comm\n") +
      query("c", "tracepoint:syscalls:sys_exit_read",
            "    where: comm == \"nginx\"\n    select: count()\n    group_by: comm\n") +
      query("d", "tracepoint:syscalls:sys_exit_close", "    select: count()\n    group_by: comm\n") +
      query("e", "tracepoint:syscalls:sys_exit_read", "    where: comm == \"nginx\"\n    select: count()\n"));
  for (size_t q = 1; q < 5; ++q) CHECK(only_attach(plan, q).function == only_attach(plan, 0).function);
  for (const std::string& text : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(text, "char bpfql_comm[16] __attribute__((aligned(8)));") == 1);
    CHECK(count_of(text, "u32 bpfql_comm_read = 0;") == 1);
    CHECK(count_of(text, "#define BPFQL_SHARED_COMM(dest)") == 1);
    // read's bodies: b's key, c's key (its filter compares that) and e's filter take the one read.
    CHECK(count_of(text, "BPFQL_SHARED_COMM(key.comm);") == 2);
    CHECK(count_of(text, "BPFQL_SHARED_COMM(s0);") == 1);
    // a (every failed call) and d (close's only body) read their own.
    CHECK(count_of(text, "bpf_get_current_comm(key.comm, sizeof(key.comm));") == 2);
  }
  // One moved body reading comm per call: nothing shared, no buffer.
  Plan apart = plan_for(
      "queries:\n" + query("a", kExit, "    select: count()\n    group_by: comm\n") +
      query("b", "tracepoint:syscalls:sys_exit_read", "    select: sum(retval)\n    group_by: comm\n") +
      query("c", "tracepoint:syscalls:sys_exit_read", "    select: count()\n") +
      query("d", "tracepoint:syscalls:sys_exit_close", "    select: count()\n    group_by: comm\n"));
  CHECK(apart.c_source.find("bpfql_comm") == std::string::npos);
  CHECK(apart.c_plain.find("BPFQL_SHARED_COMM") == std::string::npos);
}

TEST_CASE("syscalls:* bodies keep their own tracepoint where nothing traces raw_syscalls") {
  Plan plan = plan_for("queries:\n" +
                       query("a", "tracepoint:syscalls:sys_enter_openat", "    select: count()\n") +
                       query("b", "tracepoint:syscalls:sys_enter_openat",
                             "    select: count()\n    group_by: comm\n") +
                       query("c", "tracepoint:syscalls:sys_exit_read", "    select: count()\n"));
  CHECK(only_attach(plan, 0).tracepoint == "syscalls:sys_enter_openat");
  CHECK(only_attach(plan, 0).function == only_attach(plan, 1).function);  // fused where they are
  CHECK(only_attach(plan, 2).tracepoint == "syscalls:sys_exit_read");
  CHECK(plan.c_source.find("bpfql_record") == std::string::npos);
}

TEST_CASE("a syscalls:* body does not move when its query has another body there, takes a kernel "
          "stack, or the kernel's BTF has no thread_info.status") {
  // The query's two probes would both land on raw_syscalls:sys_enter.
  Plan two = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                      "  - name: b\n    probe: [tracepoint:syscalls:sys_enter_read, "
                      "tracepoint:syscalls:sys_enter_openat]\n    select: count()\n");
  for (const auto& attach : two.queries[1].attaches) CHECK(attach.tracepoint.starts_with("syscalls:"));
  // A stack taken on raw_syscalls would show that tracepoint's frames.
  Plan stack = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                        query("b", "tracepoint:syscalls:sys_enter_read",
                              "    select: count()\n    group_by: kstack\n"));
  CHECK(only_attach(stack, 1).tracepoint == "syscalls:sys_enter_read");
  // Without the offset the body cannot tell 32-bit calls apart.
  FixtureCatalog no_btf;
  no_btf.set_kernel_member_offset("thread_info", "status", std::nullopt);
  Plan blind = plan_with(no_btf, "queries:\n" + query("a", kEnter, "    select: count()\n") +
                                     query("b", "tracepoint:syscalls:sys_enter_read",
                                           "    select: count()\n"));
  CHECK(only_attach(blind, 1).tracepoint == "syscalls:sys_enter_read");
  CHECK(only_attach(blind, 1).function != only_attach(blind, 0).function);
}

TEST_CASE("a span from syscalls:sys_enter_read to sys_exit_read moves both sides") {
  Plan plan = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                       query("b", kExit, "    select: count()\n") +
                       "  - name: c\n    span:\n      begin: tracepoint:syscalls:sys_enter_read\n"
                       "      end: tracepoint:syscalls:sys_exit_read\n"
                       "    select: hist(duration)\n");
  REQUIRE(plan.queries[2].attaches.size() == 2);
  std::set<std::string> where;
  for (const auto& attach : plan.queries[2].attaches) where.insert(attach.tracepoint);
  CHECK(where == std::set<std::string>{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"});
}

TEST_CASE("keyed by a system call's number alone, with additive aggregates: array slots below 512, "
          "the hash above") {
  Plan plan = plan_for(
      "queries:\n" +
      query("a", kEnter, "    select: [count(), sum(args.id), avg(args.id)]\n    group_by: syscall(args.id) as call\n") +
      query("b", kEnter, "    select: max(args.id)\n    group_by: syscall(args.id) as call\n") +
      query("c", kEnter, "    select: count()\n    group_by: [syscall(args.id) as call, comm]\n") +
      query("d", kEnter, "    select: count()\n    group_by: args.id\n") +
      query("e", kEnter, "    select: hist(args.id)\n    group_by: syscall(args.id) as call\n"));
  CHECK(plan.queries[0].slot_map == "q0_slots");
  // max cannot be read as a difference; two keys, a plain number, a histogram: the hash alone.
  for (size_t q = 1; q < plan.queries.size(); ++q) CHECK(plan.queries[q].slot_map.empty());
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(c, "if ((u64)key.call < 512) {") == 1);
    CHECK(count_of(c, "u32 slot = (u32)key.call;") == 1);
    CHECK(c.find("q1_slots") == std::string::npos);
  }
  CHECK(count_of(plan.c_source, "BPF_PERCPU_ARRAY(q0_slots, struct q0_val, 512);") == 1);
  bool declared = false;
  for (const auto& m : plan.maps) declared = declared || (m.name == "q0_slots" && m.max_entries == 512);
  CHECK(declared);
}
