// Code generation: golden C for the query shapes we support, the Plan's layout against the C
// structs it describes, the order of statements (filters before reads), and the rule that
// nothing from a query reaches the C unescaped.
#include "compiler/codegen/codegen.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/c_prelude.h"
#include "support/check_helpers.h"
#include "support/expr_builder.h"
#include "support/generated_c_check.h"

namespace fs = std::filesystem;
using namespace bpfql;
namespace build = bpfql::testing::build;

namespace {

const fs::path kGoldenDir = fs::path(BPFQL_SOURCE_DIR) / "tests/compiler/golden";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> golden_queries() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kGoldenDir))
    if (entry.path().extension() == ".yml") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

Plan plan_for(const std::string& yaml, const std::map<std::string, std::string>& params = {},
              const CheckOptions& options = {}) {
  auto program = testing::check_yaml(yaml, params, options);
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
  return *plan;
}

std::string codegen_error(CheckedProgram program) {
  auto plan = generate_plan(program);
  return plan ? "" : plan.error().message;
}

// The body of function `name` in `c`; for a function fused with other queries' (on the same
// tracepoint), its block in the fused function.
std::string function_body(const std::string& c, const std::string& name) {
  auto start = c.find("int " + name + "(");
  if (start == std::string::npos) {
    start = c.find("{  /* " + name + " */\n");
    REQUIRE_MESSAGE(start != std::string::npos, "no function " << name);
    return c.substr(start, c.find("\n  }\n", start) - start);
  }
  auto end = c.find("\n}\n", start);
  return c.substr(start, end - start);
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

// sizeof and member offsets of `struct tag` as its _Static_assert in the C states them.
struct AssertedLayout {
  uint32_t size = 0;
  std::map<std::string, uint32_t> offsets;
};
AssertedLayout asserted_layout(const std::string& c, const std::string& tag) {
  AssertedLayout out;
  auto start = c.find("_Static_assert(sizeof(struct " + tag + ") == ");
  REQUIRE_MESSAGE(start != std::string::npos, "no layout assertion for struct " << tag);
  auto end = c.find(";", start);
  std::string assertion = c.substr(start, end - start);
  std::smatch m;
  REQUIRE(std::regex_search(assertion, m, std::regex("sizeof\\(struct \\w+\\) == (\\d+)")));
  out.size = static_cast<uint32_t>(std::stoul(m[1]));
  std::regex member("__builtin_offsetof\\(struct \\w+, (\\w+)\\) == (\\d+)");
  for (std::sregex_iterator it(assertion.begin(), assertion.end(), member), e; it != e; ++it)
    out.offsets[(*it)[1]] = static_cast<uint32_t>(std::stoul((*it)[2]));
  return out;
}

bool has_offset(const AssertedLayout& layout, uint32_t offset) {
  return std::any_of(layout.offsets.begin(), layout.offsets.end(),
                     [&](const auto& m) { return m.second == offset; });
}

}  // namespace

namespace {

// "" when `text` is the golden file's content (or the file was rewritten), else where it differs.
std::string golden_difference(const fs::path& golden, const std::string& text, bool update) {
  if (update) {
    std::ofstream(golden) << text;
    return "";
  }
  if (!fs::exists(golden)) return golden.string() + " is missing: run with BPFQL_UPDATE_GOLDEN=1";
  std::string expected = read_file(golden);
  if (expected == text) return "";
  std::istringstream want(expected), got(text);
  std::string w, g;
  int line = 1;
  while (std::getline(want, w) && std::getline(got, g) && w == g) ++line;
  return fmt::format("{}:{} differs:\n  expected: {}\n  generated: {}",
                     golden.filename().string(), line, w, g);
}

}  // namespace

TEST_CASE("generated C matches the golden files (BPFQL_UPDATE_GOLDEN=1 rewrites them)") {
  bool update = std::getenv("BPFQL_UPDATE_GOLDEN") != nullptr;
  auto queries = golden_queries();
  REQUIRE(queries.size() >= 15);
  int plain = 0;
  for (const auto& yml : queries) {
    CAPTURE(yml.filename().string());
    Plan plan = plan_for(read_file(yml));
    fs::path golden = fs::path(yml).replace_extension(".c");
    if (auto diff = golden_difference(golden, plan.c_source, update); !diff.empty()) FAIL(diff);
    // The plain-C twin (compiler/codegen/maps.h), for the programs that have one.
    fs::path plain_golden = fs::path(yml).replace_extension(".plain.c");
    if (plan.c_plain.empty()) {
      if (update) fs::remove(plain_golden);
      CHECK_MESSAGE(!fs::exists(plain_golden), plain_golden.string() << " is left over");
      continue;
    }
    ++plain;
    // The prelude is the same fixed text in every program: the golden names it instead.
    std::string text = plan.c_plain;
    const std::string& prelude = codegen::plain_c_prelude();
    auto at = text.find(prelude);
    REQUIRE(at != std::string::npos);
    text.replace(at, prelude.size(), "/* codegen::plain_c_prelude() */\n");
    if (auto diff = golden_difference(plain_golden, text, update); !diff.empty()) FAIL(diff);
  }
  CHECK(plain >= 10);
}

TEST_CASE("plain C exactly where no libbcc feature is needed") {
  // USDT (libbcc's argument readers) goes to libbcc, and kprobes and uprobes where bpfql's
  // prelude does not spell out pt_regs (outside x86-64).
  std::map<std::string, bool> expected = {
      {"count_by_comm.yml", true}, {"perf_events.yml", true}, {"span_stream.yml", true},
      {"stream.yml", true},        {"usdt.yml", false},
      {"uprobe.yml", codegen::plain_c_has_pt_regs()},
      {"kprobe.yml", codegen::plain_c_has_pt_regs()},
  };
  for (const auto& [file, plain] : expected) {
    CAPTURE(file);
    Plan plan = plan_for(read_file(kGoldenDir / file));
    CHECK(plan.c_plain.empty() != plain);
  }
  Plan tid_span = plan_for(R"(
name: by-thread
span:
  begin: tracepoint:syscalls:sys_enter_read
  end: tracepoint:syscalls:sys_exit_read
select: hist(duration)
)");
  // A span keyed by thread keeps its begin in task storage, plain C too (bpf_elf.h gives the map
  // its BTF).
  CHECK(tid_span.c_plain.find("BPF_MAP_TYPE_TASK_STORAGE") != std::string::npos);
  CHECK(tid_span.c_plain.find("bpf_task_storage_get(&q0_start, bpf_get_current_task_btf(), 0, "
                              "BPF_LOCAL_STORAGE_GET_F_CREATE)") != std::string::npos);
  Plan pid_span = plan_for(R"(
name: by-process
span:
  begin: tracepoint:syscalls:sys_enter_read
  end: tracepoint:syscalls:sys_exit_read
  key: pid
select: hist(duration)
)");
  CHECK_FALSE(pid_span.c_plain.empty());
  // Both dialects name the same maps and functions.
  for (const auto& name : {"q0_start", "q0_h0", "q0_dropped", "q0_p0", "q0_b0"}) {
    CAPTURE(name);
    CHECK(pid_span.c_source.find(name) != std::string::npos);
    CHECK(pid_span.c_plain.find(name) != std::string::npos);
  }
  CHECK(pid_span.c_plain.find(".lookup") == std::string::npos);
  CHECK(pid_span.c_plain.find("BPF_HASH") == std::string::npos);
  CHECK(pid_span.c_plain.find("#include") == std::string::npos);
}

TEST_CASE("the Plan's offsets are the ones the C asserts, for every golden query") {
  for (const auto& yml : golden_queries()) {
    CAPTURE(yml.filename().string());
    Plan plan = plan_for(read_file(yml));
    for (size_t i = 0; i < plan.queries.size(); ++i) {
      const PlanQuery& q = plan.queries[i];
      std::string prefix = "q" + std::to_string(i);
      CHECK(q.dropped_map == prefix + "_dropped");
      CHECK(plan.c_source.find("BPF_ARRAY(" + q.dropped_map + ", u64, 1);") != std::string::npos);
      if (!plan.c_plain.empty())  // the counter's value, addressed without a lookup
        CHECK(plan.c_plain.find("BPFQL_MAP_VALUE(" + q.dropped_map + ");") != std::string::npos);
      if (q.key_size) {
        auto key = asserted_layout(plan.c_source, prefix + "_key");
        CHECK(key.size == q.key_size);
        CHECK(q.key_size % 8 == 0);
        for (const auto& f : q.keys) CHECK_MESSAGE(has_offset(key, f.offset), f.name);
      }
      if (!q.value_map.empty()) {
        auto val = asserted_layout(plan.c_source, prefix + "_val");
        CHECK(val.size == q.value_size);
        CHECK(val.offsets.at("n") == 0);
        for (const auto& a : q.aggregates) {
          if (a.kind == AggKind::Sum || a.kind == AggKind::Avg || a.kind == AggKind::Stats)
            CHECK_MESSAGE(has_offset(val, a.sum_offset), a.name);
          if (a.kind == AggKind::Min || a.kind == AggKind::Max)
            CHECK_MESSAGE(has_offset(val, a.minmax_offset), a.name);
        }
      }
      for (const auto& a : q.aggregates) {
        bool histogram =
            a.kind == AggKind::Hist || a.kind == AggKind::Lhist || a.kind == AggKind::Percentile;
        CHECK(histogram == !a.map_name.empty());
        if (histogram)
          CHECK_MESSAGE(
              (plan.c_source.find(", " + a.map_name + ", ") != std::string::npos ||
               plan.c_source.find("BPF_PERCPU_ARRAY(" + a.map_name + ", ") != std::string::npos),
              a.map_name);
      }
      if (q.streaming) {
        auto ev = asserted_layout(plan.c_source, prefix + "_event");
        CHECK(ev.size == q.event_size);
        CHECK(ev.offsets.at("ts") == 0);
        for (const auto& f : q.event_fields) CHECK_MESSAGE(has_offset(ev, f.offset), f.name);
        CHECK(plan.c_source.find("BPF_PERF_OUTPUT(" + q.event_buffer + ");") != std::string::npos);
      }
      for (const auto& a : q.attaches)
        CHECK_MESSAGE(plan.c_source.find("int " + a.function + "(") != std::string::npos,
                      a.function);
    }
  }
}

TEST_CASE("count() by comm: the Plan describes the key, value and attach point") {
  Plan plan = plan_for(read_file(kGoldenDir / "count_by_comm.yml"));
  REQUIRE(plan.queries.size() == 1);
  const PlanQuery& q = plan.queries[0];
  CHECK(q.name == "syscalls-by-comm");
  CHECK(q.columns == std::vector<std::string>{"comm", "count()"});
  REQUIRE(q.keys.size() == 1);
  CHECK(q.keys[0].name == "comm");
  CHECK(q.keys[0].kind == ValueKind::String);
  CHECK(q.keys[0].offset == 0);
  CHECK(q.keys[0].size == 16);
  CHECK(q.key_size == 16);
  CHECK(q.value_map == "q0_vals");
  CHECK(q.value_size == 8);
  REQUIRE(q.aggregates.size() == 1);
  CHECK(q.aggregates[0].kind == AggKind::Count);
  CHECK(q.stack_map.empty());
  CHECK_FALSE(q.streaming);
  REQUIRE(q.attaches.size() == 1);
  CHECK(q.attaches[0].kind == ProbeKind::Tracepoint);
  CHECK(q.attaches[0].function == "q0_p0");
  CHECK(q.attaches[0].tracepoint == "raw_syscalls:sys_enter");
  CHECK(q.probe_names == std::vector<std::string>{"tracepoint:raw_syscalls:sys_enter"});
  CHECK(q.max_entries == 10240);
  // No kernel headers: only the record struct laid out from the format.
  CHECK(plan.c_source.find("#include") == std::string::npos);
  // Preallocated (values_map_kind in compiler/codegen/query.cpp says why).
  CHECK(plan.c_source.find("BPF_PERCPU_HASH(q0_vals, struct q0_key, struct q0_val, 10240);") !=
        std::string::npos);
}

TEST_CASE("stacks: a map of stack ids for keys; a streamed event holds its stack's addresses") {
  Plan streamed = plan_for(
      "name: q\nprobe: tracepoint:sched:sched_switch\nselect: [pid, kstack, ustack]\n");
  const PlanQuery& s = streamed.queries[0];
  CHECK(s.stack_map.empty());
  CHECK(streamed.c_source.find("stacktrace") == std::string::npos);
  REQUIRE(s.event_fields.size() == 3);
  for (size_t i : {1, 2}) {
    const PlanField& f = s.event_fields[i];
    CHECK(f.size == 127 * 8);
    CHECK(f.offset % 8 == 0);
    CHECK(f.offset >= s.event_fields[0].offset + s.event_fields[0].size);  // stacks come last
  }
  CHECK(s.event_fields[1].kind == ValueKind::KernelStack);
  CHECK(s.event_fields[2].kind == ValueKind::UserStack);
  std::string body = function_body(streamed.c_source, "q0_p0");
  CHECK(body.find("bpf_get_stack(args, sc->ev.kstack, sizeof(sc->ev.kstack), 0);") !=
        std::string::npos);
  CHECK(body.find("bpf_get_stack(args, sc->ev.ustack, sizeof(sc->ev.ustack), BPF_F_USER_STACK);") !=
        std::string::npos);
  // Zeroed up to the stacks only (bpf_get_stack writes them whole).
  CHECK(body.find(fmt::format("__builtin_memset(&sc->ev, 0, {});", s.event_fields[1].offset)) !=
        std::string::npos);

  Plan keyed = plan_for(
      "name: q\nprobe: tracepoint:sched:sched_switch\nselect: [kstack, count()]\n"
      "group_by: kstack\n");
  CHECK(keyed.queries[0].stack_map == "q0_stacks");
  CHECK(keyed.queries[0].keys.at(0).size == 4);
}

TEST_CASE("raw_tracepoint_ok: no field of the record read and no kernel stack taken") {
  auto raw = [](const std::string& probe, const std::string& rest) {
    Plan plan = plan_for("name: q\nprobe: " + probe + "\n" + rest);
    REQUIRE(plan.queries.size() == 1);
    REQUIRE(plan.queries[0].attaches.size() == 1);
    return plan.queries[0].attaches[0].raw_tracepoint_ok;
  };
  const std::string sched = "tracepoint:sched:sched_switch";
  // Builtins only: helpers, no record.
  CHECK(raw(sched, "select: [comm, pid, cpu, count()]\ngroup_by: [comm, pid, cpu]"));
  CHECK(raw(sched, "where: pid == 1 && comm == \"x\"\nselect: count()"));
  CHECK(raw(sched, "select: [ts, tid]"));  // streaming: perf_submit passes the context
  // A user stack is the task's; a kernel stack from a raw tracepoint would start inside the
  // BPF program and the tracepoint's code.
  CHECK(raw(sched, "select: [ustack, count()]\ngroup_by: ustack"));
  CHECK(raw(sched, "select: [ts, ustack]"));
  CHECK_FALSE(raw(sched, "select: [kstack, count()]\ngroup_by: kstack"));
  CHECK_FALSE(raw(sched, "select: [ts, kstack]"));
  // A field anywhere: a filter, a key, an aggregate, a streamed column.
  CHECK_FALSE(raw(sched, "where: args.prev_pid == 1\nselect: count()"));
  CHECK_FALSE(raw(sched, "select: [args.next_pid, count()]\ngroup_by: args.next_pid"));
  CHECK_FALSE(raw(sched, "select: sum(args.prev_prio)"));
  CHECK_FALSE(raw(sched, "select: [ts, args.prev_state]"));
  // A char[] field compared in place, and one copied into the key.
  CHECK_FALSE(raw(sched, "where: args.prev_comm == \"swapper/0\"\nselect: count()"));
  CHECK_FALSE(raw(sched, "select: [args.next_comm, count()]\ngroup_by: args.next_comm"));
  // A __data_loc string.
  CHECK_FALSE(raw("tracepoint:sched:sched_process_exec",
                  "where: args.filename == \"/bin/true\"\nselect: count()"));
  // Only tracepoints.
  CHECK_FALSE(raw("profile:hz:99", "select: [comm, count()]\ngroup_by: comm"));
}

TEST_CASE("aggregates: value offsets, signedness and histogram parameters") {
  Plan plan = plan_for(read_file(kGoldenDir / "min_max_avg_stats.yml"));
  const PlanQuery& q = plan.queries[0];
  REQUIRE(q.aggregates.size() == 5);
  CHECK(q.aggregates[0].kind == AggKind::Min);
  CHECK(q.aggregates[0].is_signed);
  CHECK(q.aggregates[0].minmax_offset == 8);
  CHECK(q.aggregates[1].minmax_offset == 16);
  CHECK(q.aggregates[2].sum_offset == 24);
  CHECK(q.aggregates[3].sum_offset == 32);
  CHECK(q.value_size == 40);
  REQUIRE(q.keys.size() == 2);
  CHECK(q.keys[1].name == "pid");
  CHECK(q.keys[1].kind == ValueKind::Unsigned);
  CHECK(q.keys[0].offset == 0);  // strings (8-aligned, compared by words) first
  CHECK(q.keys[1].offset == 16);
  CHECK(q.keys[1].size == 4);
  CHECK(q.key_size == 24);
  std::string body = function_body(plan.c_source, "q0_p0");
  CHECK(body.find("if (v->n == 1 || a0 < v->min0)") != std::string::npos);
  CHECK(body.find("if (v->n == 1 || a1 > v->max1)") != std::string::npos);
  CHECK(body.find("v->sum2 += args_ret;") != std::string::npos);

  Plan hist = plan_for(read_file(kGoldenDir / "hist.yml"));
  const PlanQuery& keyless = hist.queries[0];
  CHECK(keyless.value_map.empty());  // only a histogram: no value struct
  REQUIRE(keyless.aggregates.size() == 1);
  CHECK(keyless.aggregates[0].map_name == "q0_h0");
  CHECK(hist.c_source.find("BPF_PERCPU_ARRAY(q0_h0, u64, 66);") != std::string::npos);
  const PlanQuery& keyed = hist.queries[1];
  CHECK(keyed.value_map == "q1_vals");
  CHECK(keyed.aggregates[2].kind == AggKind::Lhist);
  CHECK(keyed.aggregates[2].lhist_min == 0);
  CHECK(keyed.aggregates[2].lhist_max == 1000);
  CHECK(keyed.aggregates[2].lhist_step == 100);
  CHECK(hist.c_source.find("BPF_F_TABLE(\"percpu_hash\", struct q1_hkey, u64, q1_h2, 122880, "
                           "BPF_F_NO_PREALLOC);") != std::string::npos);
  CHECK(hist.c_source.find("bpfql_lhist_slot(args_count, 0, 1000, 100, 11)") != std::string::npos);

  Plan pct = plan_for(read_file(kGoldenDir / "lhist_percentile.yml"));
  CHECK(pct.queries[0].aggregates[1].percentiles == std::vector<double>{50, 99});
  // A signed value (retval): 976 slots for values >= 0, 976 more for negative ones.
  CHECK(pct.c_source.find("BPF_PERCPU_ARRAY(q0_h1, u64, 1952);") != std::string::npos);
  CHECK(pct.c_source.find("bpfql_log_linear_slot_s(args_ret)") != std::string::npos);
  CHECK(pct.c_source.find("bpfql_lhist_slot_s(args_ret, -10, 100, 10, 12)") != std::string::npos);
}

TEST_CASE("the value's n is counted where something reads it: not for keyed sums alone") {
  auto counts = [](const std::string& rest) {
    Plan plan = plan_for("name: q\nprobe: tracepoint:syscalls:sys_exit_read\n" + rest);
    return function_body(plan.c_source, "q0_p0").find("v->n++;") != std::string::npos;
  };
  CHECK_FALSE(counts("select: sum(retval)\ngroup_by: comm\n"));  // the hash entry is the event
  CHECK_FALSE(counts("select: [sum(retval), hist(retval)]\ngroup_by: pid\n"));
  CHECK(counts("select: sum(retval)\n"));                          // keyless: an array entry
  CHECK(counts("select: sum(retval)\ngroup_by: syscall(args.__syscall_nr) as call\n"));  // a slot
  CHECK(counts("select: [sum(retval), count()]\ngroup_by: comm\n"));
  CHECK(counts("select: avg(retval)\ngroup_by: comm\n"));
  CHECK(counts("select: [sum(retval), max(retval)]\ngroup_by: comm\n"));  // v->n == 1: the first
  CHECK(counts("select: stats(retval)\ngroup_by: comm\n"));
}

TEST_CASE("streaming: the event begins with ts; fields are listed in select order") {
  Plan plan = plan_for(read_file(kGoldenDir / "stream.yml"));
  const PlanQuery& q = plan.queries[0];
  CHECK(q.streaming);
  CHECK(q.event_buffer == "q0_events");
  REQUIRE(q.event_fields.size() == 5);
  CHECK(q.event_fields[0].name == "pid");
  CHECK(q.event_fields[0].offset == 96);  // widest alignment first: the 4-byte ones come last
  CHECK(q.event_fields[1].name == "comm");
  CHECK(q.event_fields[1].kind == ValueKind::String);
  CHECK(q.event_fields[1].offset == 8);
  CHECK(q.event_fields[2].name == "args.filename");
  CHECK(q.event_fields[2].size == 64);
  CHECK(q.event_fields[3].offset == 100);  // "int flags": a signed 32-bit value in its slot
  CHECK(q.event_fields[3].kind == ValueKind::Signed);
  CHECK(q.event_fields[3].size == 4);
  CHECK(q.event_fields[4].offset % 8 == 0);  // a u64 is naturally aligned
  CHECK(q.event_size % 8 == 0);
  CHECK(q.value_map.empty());
  std::string body = function_body(plan.c_source, "q0_p0");
  CHECK(body.find("if (q0_events.perf_submit(args, &ev, sizeof(ev)) < 0)") != std::string::npos);
}

TEST_CASE("attach points of every probe kind") {
  Plan span = plan_for(read_file(kGoldenDir / "span.yml"));
  REQUIRE(span.queries[0].attaches.size() == 2);
  CHECK(span.queries[0].attaches[0].function == "q0_b0");
  CHECK(span.queries[0].attaches[0].tracepoint == "syscalls:sys_enter_read");
  CHECK(span.queries[0].attaches[1].function == "q0_p0");
  CHECK(span.queries[0].attaches[1].tracepoint == "syscalls:sys_exit_read");
  CHECK(span.queries[0].probe_names ==
        std::vector<std::string>{"tracepoint:syscalls:sys_exit_read"});

  Plan up = plan_for(read_file(kGoldenDir / "uprobe.yml"));
  const PlanAttach& open = up.queries[0].attaches[0];
  CHECK(open.kind == ProbeKind::Uprobe);
  CHECK(open.binary == "/usr/lib/x86_64-linux-gnu/libc.so.6");
  CHECK(open.symbol == "openat");
  CHECK(open.pid == -1);
  CHECK(up.queries[1].attaches[0].kind == ProbeKind::Uretprobe);
  CHECK(up.queries[1].stack_map == "q1_stacks");
  CHECK(up.queries[1].keys[0].kind == ValueKind::UserStack);
  CHECK(up.queries[1].keys[1].display == Display::Probe);
  CHECK(up.c_source.find("#include <uapi/linux/ptrace.h>") != std::string::npos);

  Plan usdt = plan_for(read_file(kGoldenDir / "usdt.yml"));
  const PlanAttach& u = usdt.queries[0].attaches[0];
  CHECK(u.kind == ProbeKind::Usdt);
  CHECK(u.provider == "python");
  CHECK(u.usdt_name == "function__entry");
  CHECK(usdt.c_source.find("bpf_usdt_readarg(3, ctx, &usdt_arg2);") != std::string::npos);
  CHECK(usdt.queries[0].keys[1].kind == ValueKind::Signed);
  CHECK(usdt.queries[0].keys[1].size == 4);

  Plan perf = plan_for(read_file(kGoldenDir / "perf_events.yml"));
  const PlanAttach& prof = perf.queries[0].attaches[0];
  CHECK(prof.kind == ProbeKind::Profile);
  CHECK(prof.sample_freq == 99);
  CHECK(perf.queries[0].keys[0].kind == ValueKind::KernelStack);
  CHECK(perf.queries[1].attaches[0].kind == ProbeKind::Software);
  CHECK(perf.queries[1].attaches[0].sample_period == 1000000);
  CHECK(perf.c_source.find("int q0_p0(struct bpf_perf_event_data *ctx)") != std::string::npos);

  Plan wild = plan_for(read_file(kGoldenDir / "wildcard.yml"));
  const PlanQuery& w = wild.queries[0];
  REQUIRE(w.attaches.size() == 2);
  CHECK(w.probe_names.size() == 2);
  // The probe's index is the attach cookie the runtime gives each probe.
  CHECK(function_body(wild.c_source, "q0_p1").find("bpf_get_attach_cookie(args)") !=
        std::string::npos);
  CHECK(w.attaches[1].attach_cookie);
  CHECK(w.attaches[1].probe_index == 1);
  CHECK(w.keys[0].display == Display::Probe);
}

TEST_CASE("--pid: a filter in tracepoint programs, an attach option for uprobes") {
  CheckOptions options;
  options.pid = 4321;
  Plan tp = plan_for(read_file(kGoldenDir / "count_by_comm.yml"), {}, options);
  std::string body = function_body(tp.c_source, "q0_p0");
  auto filter = body.find("if ((u32)(pid_tgid >> 32) != BPFQL_CONST(0x9e3779b97f4a0000 /* --pid */))");
  CHECK(filter != std::string::npos);
  CHECK(filter < body.find("bpf_get_current_comm"));
  REQUIRE(tp.constants.size() == 1);
  CHECK(tp.constants[0].value == 4321);
  CHECK(tp.constants[0].source == "--pid");
  CHECK(tp.c_source.find("4321") == std::string::npos);
  Plan up = plan_for(read_file(kGoldenDir / "uprobe.yml"), {}, options);
  CHECK(up.queries[0].attaches[0].pid == 4321);
  CHECK(up.c_source.find("4321") == std::string::npos);
}

TEST_CASE("--pid on a span: the begin is filtered; an end in another task is not (unless by tid)") {
  CheckOptions options;
  options.pid = 4321;
  const std::string filter = "if ((u32)(pid_tgid >> 32) != BPFQL_CONST(";
  // A block request completes in an interrupt or a kworker: filtering the completion on the
  // process left every span of `biosnoop --pid` open and printed nothing.
  Plan block = plan_for(R"(
span:
  begin: tracepoint:block:block_rq_issue
  end: tracepoint:block:block_rq_complete
  key: [args.dev, args.sector]
select: [begin.pid as pid, duration]
)", {}, options);
  CHECK(function_body(block.c_source, "q0_b0").find(filter) != std::string::npos);
  CHECK(function_body(block.c_source, "q0_p0").find(filter) == std::string::npos);
  // Keyed by thread (task storage): the end runs in the thread that began it, filtered there too.
  Plan tid = plan_for(R"(
span:
  begin: tracepoint:syscalls:sys_enter_read
  end: tracepoint:syscalls:sys_exit_read
select: count()
)", {}, options);
  CHECK(function_body(tid.c_source, "q0_b0").find(filter) != std::string::npos);
  CHECK(function_body(tid.c_source, "q0_p0").find(filter) != std::string::npos);
}

TEST_CASE("filters first, reads last; each string read once") {
  Plan sum = plan_for(read_file(kGoldenDir / "sum_filter.yml"));
  std::string body = function_body(sum.c_source, "q0_p0");
  CHECK(body.find("== 42") < body.find("bpf_get_current_comm"));

  // comm is compared before the 200-byte filename is read and searched.
  Plan big = plan_for(read_file(kGoldenDir / "big_keys.yml"));
  body = function_body(big.c_source, "q0_p0");
  CHECK(body.find("*(u16 *)&sc->hk.k.comm[0] ^ 0x0079") < body.find("bpf_probe_read_user_str"));
  CHECK(count_of(body, "bpf_probe_read_user_str") == 1);
  CHECK(count_of(body, "bpf_get_current_comm") == 1);

  // The filename is read once, into the key, and both filters test it there.
  Plan strings = plan_for(read_file(kGoldenDir / "strings.yml"));
  body = function_body(strings.c_source, "q1_p0");
  CHECK(count_of(body, "bpf_probe_read_user_str") == 1);
  CHECK(body.find("(u32)uid_gid == 0") < body.find("bpf_probe_read_user_str"));
  CHECK(body.find("*(u32 *)&key.args_filename[0] ^ 0x6374652f") != std::string::npos);  // "/etc"
  // Two tests of comm, one read.
  body = function_body(strings.c_source, "q2_p0");
  CHECK(count_of(body, "bpf_get_current_comm") == 1);

  // One bpf_get_current_pid_tgid() for pid and tid.
  Plan pt = plan_for(R"(
name: pt
probe: tracepoint:raw_syscalls:sys_enter
where: pid != tid
select: count()
group_by: [pid, tid]
)");
  CHECK(count_of(pt.c_source, "bpf_get_current_pid_tgid()") == 1);
}

TEST_CASE("strings: comparisons of every source, in place when the record holds them") {
  Plan plan = plan_for(read_file(kGoldenDir / "tracepoint_strings.yml"));
  std::string sw = function_body(plan.c_source, "q0_p0");
  // prev_comm == next_comm compares two char[16] of the record through a bounded loop.
  CHECK(sw.find("for (u32 i = 0; i < 16; i++)") != std::string::npos);
  std::string exec = function_body(plan.c_source, "q1_p0");
  CHECK(exec.find("bpf_probe_read_kernel_str(ev.args_filename, sizeof(ev.args_filename), "
                  "(char *)args + (args->filename & 0xFFFF));") != std::string::npos);

  // A char[] compared with a literal is tested in place, with no copy.
  Plan in_place = plan_for(R"(
name: ip
probe: tracepoint:sched:sched_switch
where: args.next_comm == "swapper/0"
select: count()
)");
  std::string body = function_body(in_place.c_source, "q0_p0");
  CHECK(body.find("*(u64 *)&args->next_comm[0] ^ 0x2f72657070617773ULL") != std::string::npos);
  CHECK(body.find("*(u16 *)&args->next_comm[8] ^ 0x0030") != std::string::npos);  // "0\0"
  CHECK(body.find("memcpy") == std::string::npos);

  // comm against a user string: different sources and sizes compare up to the shorter.
  Plan mixed = plan_for(R"(
name: mixed
probe: tracepoint:syscalls:sys_enter_openat
where: comm == args.filename
select: count()
)");
  body = function_body(mixed.c_source, "q0_p0");
  CHECK(body.find("for (u32 i = 0; i < 16; i++)") != std::string::npos);
}

// The C without its comments (which show the query's text, made comment-safe).
std::string without_comments(const std::string& c) {
  return std::regex_replace(c, std::regex(R"(/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)"), "");
}

TEST_CASE("literals reach the C only as escaped byte constants") {
  Plan plan = plan_for(R"(
name: esc
probe: tracepoint:syscalls:sys_enter_openat
where:
  - contains(args.filename, "a'b\\c\"*/\xe9\x01é")
  - args.filename != "a'b\\c\"*/x"
select: count()
)");
  std::string body = function_body(plan.c_source, "q0_p0");
  // Searched byte by byte: char constants.
  CHECK(body.find("^ 'a')") != std::string::npos);
  CHECK(body.find("^ '\\'')") != std::string::npos);
  CHECK(body.find("^ '\\\\')") != std::string::npos);
  CHECK(body.find("^ '\"')") != std::string::npos);
  CHECK(body.find("^ '\\xe9')") != std::string::npos);
  CHECK(body.find("^ '\\x01')") != std::string::npos);
  CHECK(body.find("^ '\\xc3')") != std::string::npos);  // é in UTF-8
  CHECK(body.find("^ '\\xa9')") != std::string::npos);
  // Compared a word at a time: the bytes as little-endian numbers (and the NUL after 'x').
  CHECK(body.find("*(u64 *)&s0[0] ^ 0x2f2a22635c622761ULL") != std::string::npos);
  CHECK(body.find("*(u16 *)&s0[8] ^ 0x0078") != std::string::npos);
  std::string code = without_comments(plan.c_source);
  CHECK(code.find("a'b") == std::string::npos);
  // No string literal but our own layout assertions' messages.
  code = std::regex_replace(code, std::regex(R"("layout of struct \w+")"), "");
  code = std::regex_replace(code, std::regex(R"('"')"), "");
  CHECK(code.find('"') == std::string::npos);
  // The comments show the filters, unable to end early.
  CHECK(body.find("/* where args.filename != \"a'b\\\\c\\\"* /x\" */") != std::string::npos);
}

TEST_CASE("names from the query are made safe for C") {
  CHECK(c_names::char_literal('a') == "'a'");
  CHECK(c_names::char_literal('\'') == "'\\''");
  CHECK(c_names::char_literal('\\') == "'\\\\'");
  CHECK(c_names::char_literal('\n') == "'\\x0a'");
  CHECK(c_names::char_literal(0xff) == "'\\xff'");
  CHECK(c_names::comment_text("a */ b /* c\nd") == "a * / b / * c?d");
  CHECK(c_names::comment_text("end\\") == "end\\ ");
  std::set<std::string> taken;
  CHECK(c_names::field_name("str(args.filename)", "k0", taken) == "str_args_filename");
  CHECK(c_names::field_name("str(args.filename)", "k1", taken) == "str_args_filename_2");
  CHECK(c_names::field_name("int", "k2", taken) == "k2");
  CHECK(c_names::field_name("__x", "k3", taken) == "x");
  CHECK(c_names::field_name("*/", "k4", taken) == "k4");
  CHECK(c_names::is_c_member_name("__syscall_nr"));
  CHECK_FALSE(c_names::is_c_member_name("struct"));
  CHECK_FALSE(c_names::is_c_member_name("a-b"));
  CHECK_FALSE(c_names::is_safe_identifier("__syscall_nr"));
  CHECK(c_names::s64_literal(-5) == "-5");
  CHECK(c_names::s64_literal(INT64_MIN) == "(-9223372036854775807LL - 1)");
  CHECK(c_names::u64_literal(UINT64_MAX) == "18446744073709551615ULL");

  // A column named by its text becomes a clean member name; the comment cannot be closed early.
  Plan plan = plan_for(R"(
name: names
probe: tracepoint:syscalls:sys_enter_openat
select: count()
group_by: args.filename == "*/x"
)");
  CHECK(plan.c_source.find("u8 args_filename_x;") != std::string::npos);
  CHECK(plan.c_source.find("/* args.filename == \"* /x\" */") != std::string::npos);
  CHECK(count_of(plan.c_source, "*/") == count_of(plan.c_source, "/*"));
}

TEST_CASE("unsafe names in a tracepoint format: refused, or kept out of the C") {
  using build::tp_field;
  CheckedProgram bad_category;
  bad_category.queries.push_back(build::count_query(
      build::tracepoint(build::format("x*/y", "e", {tp_field("id", 8, 8, FieldKind::Integer)}))));
  CHECK(codegen_error(std::move(bad_category)).find("has a name generated code cannot use") !=
        std::string::npos);

  // A field whose name is not a C identifier stays padding; using it is an error, not C.
  auto fmt = build::format(
      "cat", "ev",
      {tp_field("a;b", 8, 8, FieldKind::Integer), tp_field("ok", 16, 4, FieldKind::Integer, true)});
  CheckedProgram unused;
  unused.queries.push_back(build::count_query(build::tracepoint(fmt), [] {
    std::vector<ExprPtr> k;
    k.push_back(build::field("ok", Type::integer(32, true)));
    return k;
  }()));
  auto plan = generate_plan(unused);
  REQUIRE(plan.has_value());
  CHECK(plan->c_source.find("a;b") == std::string::npos);
  CHECK(plan->c_source.find("u8 __pad0[8];") != std::string::npos);
  CHECK(plan->c_source.find("key.args_ok = args_ok;") != std::string::npos);

  CheckedProgram used;
  used.queries.push_back(build::count_query(build::tracepoint(fmt), [] {
    std::vector<ExprPtr> k;
    k.push_back(build::field("a;b", Type::integer(64, false)));
    return k;
  }()));
  CHECK(codegen_error(std::move(used)).find("cannot be read") != std::string::npos);
}

TEST_CASE("ppid: current->real_parent->tgid at the offsets the checker found") {
  auto query = [] {
    std::vector<ExprPtr> keys;
    keys.push_back(build::builtin(Builtin::Ppid, Type::integer(32, false), "ppid"));
    return build::count_query(build::tracepoint(build::format("cat", "ev", {})), std::move(keys));
  };
  CheckedProgram without;
  without.queries.push_back(query());
  CHECK(codegen_error(std::move(without)).find("'ppid' needs the offsets") != std::string::npos);

  CheckedProgram with;
  with.queries.push_back(query());
  with.queries[0].task_offsets = TaskOffsets{1280, 1268};
  auto plan = generate_plan(with);
  REQUIRE(plan.has_value());
  std::string body = function_body(plan->c_source, "q0_p0");
  CHECK(body.find("u64 task = bpf_get_current_task();") != std::string::npos);
  CHECK(body.find("(void *)(task + 1280)") != std::string::npos);
  CHECK(body.find("(void *)(parent + 1268)") != std::string::npos);
  CHECK(body.find("key.ppid = ppid;") != std::string::npos);
  CHECK(plan->c_source.find("task_struct") == std::string::npos);  // no kernel struct types

  CheckedProgram absurd;
  absurd.queries.push_back(query());
  absurd.queries[0].task_offsets = TaskOffsets{-8, 1268};
  CHECK(codegen_error(std::move(absurd)).find("implausible") != std::string::npos);
}

TEST_CASE("what code generation refuses, with a diagnostic") {
  CHECK(codegen_error([] {
          CheckedProgram p;
          p.queries.push_back(
              build::count_query(build::tracepoint(build::format("cat", "ev", {})), [] {
                std::vector<ExprPtr> k;
                k.push_back(build::builtin(Builtin::Retval, Type::integer(64, true), "retval"));
                return k;
              }()));
          return p;
        }())
            .find("'retval' is not available") != std::string::npos);

  // Keys beyond what a BPF hash key may hold.
  auto big = testing::check_yaml(R"(
name: big
probe: tracepoint:syscalls:sys_enter_openat
strlen: 256
select: count()
group_by:
  - args.filename
  - comm
  - str(args.filename) as again
)");
  REQUIRE(big.has_value());
  auto plan = generate_plan(*big);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().message.find("a BPF map key holds at most 512") != std::string::npos);
  CHECK(plan.error().loc.line == 7);  // the first key
}

TEST_CASE("the BPF stack: large keys and events move to a per-CPU scratch array") {
  Plan small = plan_for(read_file(kGoldenDir / "count_by_comm.yml"));
  CHECK(small.c_source.find("scratch") == std::string::npos);

  Plan keys = plan_for(read_file(kGoldenDir / "big_keys.yml"));
  CHECK(keys.c_source.find("BPF_PERCPU_ARRAY(q0_scratch, struct q0_scratch, 1);") !=
        std::string::npos);
  CHECK(keys.c_source.find("struct q0_hkey hk;") != std::string::npos);  // a member, not a local
  CHECK(function_body(keys.c_source, "q0_p0").find("lookup_or_try_init(&sc->hk.k, &zero)") !=
        std::string::npos);

  Plan events = plan_for(read_file(kGoldenDir / "big_stream.yml"));
  CHECK(function_body(events.c_source, "q0_p0")
            .find("if (q0_events.perf_submit(args, &sc->ev, sizeof(sc->ev)) < 0)") != std::string::npos);

  // Filter-only strings too: three 256-byte buffers cannot all be locals.
  Plan bufs = plan_for(R"(
name: bufs
probe: uprobe:c:openat
strlen: 256
where:
  - contains(str(arg0), "a")
  - contains(str(arg1), "b")
  - startswith(str(arg2), "c")
select: count()
)");
  std::string body = function_body(bufs.c_source, "q0_p0");
  CHECK(count_of(body, "sizeof(sc->s") == 3);
}

namespace {

// "[ITEM as PREFIX0, ..., ITEM as PREFIX<n-1>]".
std::string many(const std::string& item, const std::string& prefix, int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + item + " as " + prefix + std::to_string(i);
  return out + "]";
}

}  // namespace

TEST_CASE("an event over 1 KiB is zeroed 1 KiB at a time, in memsets LLVM keeps apart") {
  // ts and 130 u64 columns: 1048 bytes, more than one memset LLVM's BPF backend inlines.
  Plan plan = plan_for("name: wide\nprobe: tracepoint:syscalls:sys_enter_write\nselect: " +
                       many("args.count + 1", "c", 130) + "\n");
  REQUIRE(plan.queries[0].event_size == 1048);
  std::string body = function_body(plan.c_source, "q0_p0");
  CHECK(body.find("  __builtin_memset(&sc->ev, 0, 1024);\n"
                  "  BPFQL_BARRIER();\n"
                  "  __builtin_memset((u64 *)&sc->ev + 128, 0, 24);\n") != std::string::npos);
  CHECK(body.find("perf_submit(args, &sc->ev, sizeof(sc->ev))") != std::string::npos);  // all of it
  // The barrier is bpfql's fixed macro, which the injection oracle allows (and no other asm).
  CHECK(plan.c_source.find("#define BPFQL_BARRIER() asm volatile(\"\" ::: \"memory\")\n") !=
        std::string::npos);
  CHECK(testing::generated_c_problem(plan.c_source) == "");
  CHECK(testing::generated_c_problem(plan.c_plain) == "");
}

TEST_CASE("per-CPU map values hold at most 32 KiB: larger events and values are errors") {
  // 128 strings of 256 bytes and the time: 32776 bytes.
  auto events = testing::check_yaml(
      "name: events\nprobe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nselect: " +
      many("args.filename", "s", 128) + "\n");
  REQUIRE(events.has_value());
  std::string error = codegen_error(std::move(*events));
  CHECK(error.find("each event of query 'events' takes 32776 bytes") != std::string::npos);
  CHECK(error.find("at most 32768 (select fewer columns or lower `strlen`)") != std::string::npos);
  // One fewer fits.
  plan_for("name: events\nprobe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nselect: " +
           many("args.filename", "s", 127) + "\n");

  // 4096 sums and the count: 32776 bytes per key.
  auto values = testing::check_yaml(
      "name: sums\nprobe: tracepoint:syscalls:sys_enter_write\n"
      "select: " +
      many("sum(args.count)", "s", 4096) + "\ngroup_by: pid\n");
  REQUIRE(values.has_value());
  error = codegen_error(std::move(*values));
  CHECK(error.find("the aggregates of query 'sums' take 32776 bytes per key") != std::string::npos);
}

TEST_CASE("a tracepoint field or a function argument is read once, into a local") {
  // Read at each use, clang keeps `args + 32` in a register, which the verifier refuses.
  Plan hists = plan_for("name: h\nprobe: tracepoint:syscalls:sys_enter_write\nselect: " +
                        many("hist(args.count)", "h", 21) + "\n");
  std::string body = function_body(hists.c_source, "q0_p0");
  CHECK(count_of(body, "args->count") == 1);
  CHECK(body.find("u64 args_count = args->count;") != std::string::npos);
  CHECK(body.find("bpfql_hist_slot(args_count)") != std::string::npos);

  Plan arguments =
      plan_for("name: a\nprobe: uprobe:c:write\nselect: " + many("hist(arg2)", "h", 3) + "\n");
  CHECK(count_of(function_body(arguments.c_source, "q0_p0"), "PT_REGS_PARM3(ctx)") == 1);
  Plan returns =
      plan_for("name: r\nprobe: uretprobe:c:write\nselect: " + many("hist(retval)", "h", 3) + "\n");
  CHECK(count_of(function_body(returns.c_source, "q0_p0"), "PT_REGS_RC(ctx)") == 1);
}

TEST_CASE("integer expressions: signed arithmetic and comparisons follow the checker's types") {
  Plan plan = plan_for(read_file(kGoldenDir / "arithmetic.yml"));
  std::string body = function_body(plan.c_source, "q0_p0");
  CHECK(body.find("bpfql_smod(bpfql_sdiv(args_ret, 2), 3)") != std::string::npos);
  CHECK(plan.c_source.find("static __always_inline s64 bpfql_sdiv(s64 a, s64 b)") !=
        std::string::npos);

  // u32 pid against a negative number compares signed; u64 arithmetic on a u32 field widens first.
  Plan mixed = plan_for(R"(
name: mixed
probe: tracepoint:kmem:mm_page_alloc
where: [pid > -1, args.order + 4294967295 > 5]
select: count()
)");
  body = function_body(mixed.c_source, "q0_p0");
  CHECK(body.find("((s64)(u32)(pid_tgid >> 32) > (-1))") != std::string::npos);
  CHECK(body.find("(((u64)args_order + 4294967295ULL) > 5)") != std::string::npos);
}

TEST_CASE("int and duration parameters are run-time constants: one program for every value") {
  const std::string query = R"(params:
  target: {type: int, default: 7}
  floor: {type: duration, default: 1ms}
  lo: {type: int, default: -3}
  on: {type: bool, default: true}
  who: {type: string, default: "sh"}
probe: tracepoint:syscalls:sys_exit_read
where: [pid == $target, args.ret > $lo, $on, comm == $who]
select: sum(args.ret * $floor)
)";
  Plan a = plan_for(query);
  Plan b = plan_for(query, {{"target", "123456"}, {"floor", "2s"}, {"lo", "-9"}});
  CHECK(a.c_source == b.c_source);
  REQUIRE(a.constants.size() == 3);
  REQUIRE(b.constants.size() == 3);
  CHECK(a.constants[0].value == 7);
  CHECK(b.constants[0].value == 123456);
  CHECK(b.constants[0].source == "$target");
  CHECK(b.constants[1].value == 9);  // the magnitude: the C negates it
  CHECK(b.constants[2].value == 2000000000);
  CHECK(a.c_source.find("#define BPFQL_CONST(marker)") != std::string::npos);
  // bool and string parameters shape the code: they stay literals, and their values are the
  // program's
  Plan c = plan_for(query, {{"who", "bash"}});
  CHECK(c.c_source != a.c_source);
  CHECK(c.c_source.find("0x68736162") != std::string::npos);  // "bash", a little-endian word
}

TEST_CASE("a literal that looks like a run-time constant marker is made one, with its value") {
  Plan p = plan_for(R"(probe: tracepoint:syscalls:sys_enter_getppid
where: pid != 0x9e3779b97f4a0001
select: count()
)");
  REQUIRE(p.constants.size() == 1);
  CHECK(p.constants[0].value == 0x9e3779b97f4a0001ULL);
  CHECK(p.c_source.find("BPFQL_CONST(0x9e3779b97f4a0000") != std::string::npos);
}

TEST_CASE("a query without run-time constants defines no BPFQL_CONST") {
  Plan p = plan_for(read_file(kGoldenDir / "count_by_comm.yml"));
  CHECK(p.constants.empty());
  CHECK(p.c_source.find("BPFQL_CONST") == std::string::npos);
}

TEST_CASE("a small literal on the left of a shift or of constant arithmetic is made 64-bit") {
  Plan plan = plan_for(R"(
probe: tracepoint:syscalls:sys_enter_getppid
select: [sum(1 << 40), sum(2 * 3), max(pid << 33)]
)");
  CHECK(plan.c_source.find("((u64)1 << 40)") != std::string::npos);
  CHECK(plan.c_source.find("((u64)2 * 3)") != std::string::npos);
  CHECK(plan.c_source.find("+= (1 << 40)") == std::string::npos);
}
