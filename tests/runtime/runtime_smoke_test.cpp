// The runtime against the real kernel, with hand-written Plans (no compiler involved): load,
// attach, count getppid() calls made by this process, read and clear maps, stream events, run a
// whole plan with stop_after, and detach fast. Needs root; skipped with a message otherwise.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bcc/libbpf.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/load/attach.h"
#include "runtime/collect/collector.h"
#include "runtime/load/detach.h"
#include "runtime/load/loader.h"
#include "runtime/load/map_precreation.h"
#include "runtime/collect/map_reader.h"
#include "runtime/session.h"
#include "runtime/collect/stream.h"

using namespace bpfql;

namespace {

bool can_load_bpf() {
  Plan empty;
  if (auto problem = check_host(empty)) {
    MESSAGE("skipping: " << *problem);
    return false;
  }
  return true;
}

void call_getppid(int n) {
  for (int i = 0; i < n; ++i) syscall(SYS_getppid);
}

PlanAttach tracepoint(const std::string& function, const std::string& tp) {
  PlanAttach a;
  a.kind = ProbeKind::Tracepoint;
  a.function = function;
  a.tracepoint = tp;
  a.spec = "tracepoint:" + tp;
  return a;
}

PlanAggregate aggregate(const char* name, AggKind kind, uint32_t sum_offset = 0) {
  PlanAggregate a;
  a.name = name;
  a.kind = kind;
  a.sum_offset = sum_offset;
  return a;
}

// q0: count() and sum(2) by pid (per-CPU hash); q1: count() and hist(5) without keys (per-CPU
// arrays). Both only for this process.
Plan counting_plan() {
  Plan plan;
  plan.c_source = fmt::format(R"(
struct q0_key_t {{ u32 pid; u32 pad; }};
struct q0_value_t {{ u64 n; u64 sum; }};
BPF_PERCPU_HASH(q0_values, struct q0_key_t, struct q0_value_t, 1024);
BPF_PERCPU_ARRAY(q0_dropped, u64, 1);
struct q1_value_t {{ u64 n; }};
BPF_PERCPU_ARRAY(q1_values, struct q1_value_t, 1);
BPF_PERCPU_ARRAY(q1_hist0, u64, 66);

int q0_probe0(void *ctx) {{
  u64 id = bpf_get_current_pid_tgid();
  if ((id >> 32) != {pid}) return 0;
  struct q0_key_t key = {{}};
  key.pid = id >> 32;
  struct q0_value_t zero = {{}};
  struct q0_value_t *v = q0_values.lookup_or_try_init(&key, &zero);
  if (!v) {{ int k = 0; u64 *d = q0_dropped.lookup(&k); if (d) (*d)++; return 0; }}
  v->n++;
  v->sum += 2;
  return 0;
}}

int q1_probe0(void *ctx) {{
  if ((bpf_get_current_pid_tgid() >> 32) != {pid}) return 0;
  int zero = 0;
  struct q1_value_t *v = q1_values.lookup(&zero);
  if (v) v->n++;
  int slot = 4;  /* hist(5): 2^2 <= 5 < 2^3 */
  u64 *c = q1_hist0.lookup(&slot);
  if (c) (*c)++;
  return 0;
}}
)",
                              fmt::arg("pid", getpid()));
  PlanQuery q0;
  q0.name = "bypid";
  q0.attaches = {tracepoint("q0_probe0", "syscalls:sys_enter_getppid")};
  q0.columns = {"pid", "count()", "sum(2)"};
  q0.keys = {PlanField{"pid", ValueKind::Unsigned, 0, 4, Display::None}};
  q0.key_size = 8;
  q0.value_map = "q0_values";
  q0.value_size = 16;
  q0.aggregates = {aggregate("count()", AggKind::Count), aggregate("sum(2)", AggKind::Sum, 8)};
  q0.dropped_map = "q0_dropped";

  PlanQuery q1;
  q1.name = "total";
  q1.attaches = {tracepoint("q1_probe0", "syscalls:sys_enter_getppid")};  // the same tracepoint
  q1.columns = {"count()", "hist(5)"};
  q1.value_map = "q1_values";
  q1.value_size = 8;
  PlanAggregate h = aggregate("hist(5)", AggKind::Hist);
  h.map_name = "q1_hist0";
  q1.aggregates = {aggregate("count()", AggKind::Count), h};
  plan.queries = {q0, q1};
  return plan;
}

uint64_t u64_cell(const Cell& c) { return std::get<uint64_t>(c); }

}  // namespace

TEST_CASE("root: a hand-written plan loads, attaches, counts getppid() and clears its maps") {
  if (!can_load_bpf()) return;
  Plan plan = counting_plan();
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  Attachments probes;
  AttachResult attached = attach_all(*loaded.bpf, plan, probes);
  REQUIRE_MESSAGE(attached.error.empty(), attached.error);
  CHECK(attached.probes == 2);
  MapReader maps;
  REQUIRE(maps.open(*loaded.bpf, plan) == "");

  call_getppid(1000);
  QuerySnapshot s0 = maps.read(plan.queries[0]);
  auto rows = build_rows(plan.queries[0], s0, {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[0]) == static_cast<uint64_t>(getpid()));
  CHECK(u64_cell(rows[0].cells[1]) == 1000);
  CHECK(u64_cell(rows[0].cells[2]) == 2000);
  CHECK(s0.dropped == 0);

  QuerySnapshot s1 = maps.read(plan.queries[1]);
  rows = build_rows(plan.queries[1], s1, {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[0]) == 1000);
  auto hist = std::get<Histogram>(rows[0].cells[1]);
  REQUIRE(hist.buckets.size() == 1);
  CHECK(hist.buckets[0].low == 4);
  CHECK(hist.buckets[0].high == 8);
  CHECK(hist.buckets[0].count == 1000);

  // Not cumulative: the reads cleared the maps.
  call_getppid(10);
  rows = build_rows(plan.queries[0], maps.read(plan.queries[0]), {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[1]) == 10);
  rows = build_rows(plan.queries[1], maps.read(plan.queries[1]), {});
  CHECK(u64_cell(rows[0].cells[0]) == 10);
  CHECK(std::get<Histogram>(rows[0].cells[1]).buckets.at(0).count == 10);

  detach_all(std::move(loaded.bpf), probes, /*background=*/false);
}

// Opens the plan's maps and attaches all of its (two) probes, failing the test otherwise.
AttachResult open_and_attach(BpfObject& bpf, const Plan& plan, MapReader& maps,
                             Attachments& probes) {
  REQUIRE(maps.open(bpf, plan) == "");
  AttachResult attached = attach_all(bpf, plan, probes);
  REQUIRE_MESSAGE(attached.error.empty(), attached.error);
  CHECK(attached.probes == 2);
  return attached;
}

TEST_CASE("root: a program that reads no record runs as a raw tracepoint") {
  if (!can_load_bpf()) return;
  Plan plan = counting_plan();
  plan.queries[0].attaches = {tracepoint("q0_probe0", "raw_syscalls:sys_enter")};
  plan.queries[0].attaches[0].raw_tracepoint_ok = true;
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  CHECK(loaded.bpf->program_type("q0_probe0") == BPF_PROG_TYPE_RAW_TRACEPOINT);
  CHECK(loaded.bpf->program_type("q1_probe0") == BPF_PROG_TYPE_TRACEPOINT);  // not raw_tracepoint_ok
  MapReader maps;
  Attachments probes;
  CHECK(open_and_attach(*loaded.bpf, plan, maps, probes).raw_tracepoints == 1);

  call_getppid(1000);
  // Every system call of this process from the attach on: the getppid()s, and a few more (the
  // end of attach_all restoring stderr, the map read's own bpf() calls, which enter first).
  auto rows = build_rows(plan.queries[0], maps.read(plan.queries[0]), {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[1]) >= 1000);
  CHECK(u64_cell(rows[0].cells[1]) <= 1100);
  rows = build_rows(plan.queries[1], maps.read(plan.queries[1]), {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[0]) == 1000);
  detach_all(std::move(loaded.bpf), probes, /*background=*/false);
}

TEST_CASE("root: a raw tracepoint program whose tracepoint has no raw tracepoint is attached as a "
          "tracepoint program") {
  if (!can_load_bpf()) return;
  Plan plan = counting_plan();
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  // As if the compiler had chosen a raw tracepoint for an event whose tracepoint is named
  // otherwise: sys_enter_getppid is an event of the syscalls category, not a tracepoint.
  REQUIRE(loaded.bpf->reload_as("q0_probe0", BPF_PROG_TYPE_RAW_TRACEPOINT) >= 0);
  CHECK(loaded.bpf->program_type("q0_probe0") == BPF_PROG_TYPE_RAW_TRACEPOINT);
  MapReader maps;
  Attachments probes;
  CHECK(open_and_attach(*loaded.bpf, plan, maps, probes).raw_tracepoints == 0);
  CHECK(loaded.bpf->program_type("q0_probe0") == BPF_PROG_TYPE_TRACEPOINT);

  call_getppid(1000);
  auto rows = build_rows(plan.queries[0], maps.read(plan.queries[0]), {});
  REQUIRE(rows.size() == 1);
  CHECK(u64_cell(rows[0].cells[1]) == 1000);
  detach_all(std::move(loaded.bpf), probes, /*background=*/false);
}

TEST_CASE("root: a verifier rejection names the query and the reason") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source =
      "int q0_probe0(void *ctx) { int *p = (int *)(long)bpf_get_prandom_u32(); return *p; }";
  PlanQuery q;
  q.name = "broken";
  q.attaches = {tracepoint("q0_probe0", "syscalls:sys_enter_getppid")};
  plan.queries = {q};
  LoadResult loaded = load_program(plan);
  CHECK(!loaded.bpf);
  CHECK(loaded.error.find("the kernel's verifier rejected the program for query broken: ") == 0);
  CHECK(loaded.error.find("invalid mem access") != std::string::npos);
  CHECK(loaded.error.find("run with -v for the whole log") != std::string::npos);
}

TEST_CASE("root: C that does not compile is reported with the compiler's errors") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source = "int q0_probe0(void *ctx) { return undefined_thing; }";
  PlanQuery q;
  q.name = "typo";
  q.attaches = {tracepoint("q0_probe0", "syscalls:sys_enter_getppid")};
  plan.queries = {q};
  LoadResult loaded = load_program(plan);
  CHECK(!loaded.bpf);
  CHECK(loaded.error.find("failed to compile the generated BPF program") == 0);
  CHECK(loaded.error.find("use of undeclared identifier 'undefined_thing'") != std::string::npos);
}

TEST_CASE("root: an attach failure names the probe and the reason") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source = "int q0_probe0(void *ctx) { return 0; }";
  PlanQuery q;
  q.name = "nope";
  q.attaches = {tracepoint("q0_probe0", "syscalls:sys_enter_no_such_call")};
  plan.queries = {q};
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  Attachments probes;
  AttachResult attached = attach_all(*loaded.bpf, plan, probes);
  CHECK(attached.error ==
        "cannot attach tracepoint:syscalls:sys_enter_no_such_call for query nope: no such "
        "tracepoint in this kernel");
  CHECK(probes.owned().empty());
}

namespace {

// Keeps what a streaming query delivered.
class CapturingOutput : public Output {
 public:
  void interval(const IntervalResult& r) override { intervals.push_back(r); }
  void event(const StreamRow& row) override { events.push_back(row); }
  void events_not_printed(const PlanQuery&, uint64_t) override {}  // its queries have no limit
  void flush() override {}
  std::vector<IntervalResult> intervals;
  std::vector<StreamRow> events;
};

}  // namespace

TEST_CASE("root: streamed events arrive through the perf buffer, decoded") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source = fmt::format(R"(
struct q0_event_t {{ u64 ts; u32 pid; u32 seq; }};
BPF_PERF_OUTPUT(q0_events);
BPF_ARRAY(q0_seq, u32, 1);
int q0_probe0(void *ctx) {{
  if ((bpf_get_current_pid_tgid() >> 32) != {pid}) return 0;
  struct q0_event_t ev = {{}};
  ev.ts = bpf_ktime_get_ns();
  ev.pid = {pid};
  int zero = 0;
  u32 *seq = q0_seq.lookup(&zero);
  if (seq) {{ ev.seq = *seq; *seq += 1; }}  /* one thread: no atomics needed */
  q0_events.perf_submit(ctx, &ev, sizeof(ev));
  return 0;
}}
)",
                              fmt::arg("pid", getpid()));
  PlanQuery q;
  q.name = "events";
  q.streaming = true;
  q.attaches = {tracepoint("q0_probe0", "syscalls:sys_enter_getppid")};
  q.event_buffer = "q0_events";
  q.event_size = 16;
  q.event_fields = {PlanField{"pid", ValueKind::Unsigned, 8, 4, Display::None},
                    PlanField{"seq", ValueKind::Unsigned, 12, 4, Display::None}};
  plan.queries = {q};

  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  CapturingOutput out;
  EventStreams streams(out, [](const PlanQuery&) { return DecodeHooks{}; });
  REQUIRE(streams.open(*loaded.bpf, plan) == "");
  Attachments probes;
  REQUIRE(attach_all(*loaded.bpf, plan, probes).error.empty());
  call_getppid(100);
  streams.drain();
  REQUIRE(out.events.size() == 100);
  CHECK(out.events[0].query == &plan.queries[0]);
  CHECK(out.events[0].ts > 0);
  CHECK(u64_cell(out.events[0].cells[0]) == static_cast<uint64_t>(getpid()));
  std::vector<bool> seen(100, false);
  for (const auto& e : out.events) seen.at(u64_cell(e.cells[1])) = true;
  CHECK(std::count(seen.begin(), seen.end(), true) == 100);
  CHECK(streams.lost(&plan.queries[0]) == 0);
  detach_all(std::move(loaded.bpf), probes, /*background=*/false);
}

TEST_CASE("root: run_plan prints at stop_after and exits 0") {
  if (!can_load_bpf()) return;
  Plan plan = counting_plan();
  plan.queries[1].stop_after_ns = 300'000'000;
  plan.queries[0].interval_ns = 100'000'000;
  std::string path = fmt::format("/tmp/bpfql_smoke_{}.json", getpid());
  RunOptions options;
  options.format = OutputFormat::Json;
  options.output_path = path;

  std::atomic<bool> running = true;
  std::thread workload([&] {
    while (running) {
      call_getppid(100);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  auto t0 = std::chrono::steady_clock::now();
  int status = run_plan(plan, options);
  auto took = std::chrono::steady_clock::now() - t0;
  running = false;
  workload.join();

  CHECK(status == 0);
  CHECK(took < std::chrono::seconds(10));  // it stops by itself (a bound, not a benchmark)
  std::ifstream in(path);
  std::string line;
  int bypid = 0, total = 0;
  while (std::getline(in, line)) {
    if (line.find("\"query\":\"bypid\"") != std::string::npos) ++bypid;
    if (line.find("\"query\":\"total\"") != std::string::npos) ++total;
  }
  CHECK(bypid >= 3);  // every 100 ms for 300 ms, plus the partial interval at the end
  CHECK(bypid <= 4);
  CHECK(total == 1);  // no interval: once, at exit
  std::remove(path.c_str());
}

TEST_CASE("root: detaching 10 tracepoints in the background leaves bpfql free at once") {
  if (!can_load_bpf()) return;
  const char* calls[] = {"getppid", "getpid", "getuid",  "getgid",      "geteuid",
                         "getegid", "gettid", "getpgrp", "sched_yield", "umask"};
  Plan plan;
  PlanQuery q;
  q.name = "many";
  for (int i = 0; i < 10; ++i) {
    plan.c_source += fmt::format("int q0_probe{}(void *ctx) {{ return 0; }}\n", i);
    q.attaches.push_back(
        tracepoint(fmt::format("q0_probe{}", i), fmt::format("syscalls:sys_enter_{}", calls[i])));
  }
  plan.queries = {q};
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  Attachments probes;
  REQUIRE(attach_all(*loaded.bpf, plan, probes).error.empty());
  // Each tracepoint: its perf event and the BPF link that puts the program on it (closing the
  // link takes the program off at once; the perf event's close waits for the kernel).
  REQUIRE(probes.owned().size() == 20);
  CHECK(std::count_if(probes.owned().begin(), probes.owned().end(),
                      [](const OwnedProbe& p) { return p.link; }) == 10);
  auto t0 = std::chrono::steady_clock::now();
  detach_all(std::move(loaded.bpf), probes, /*background=*/true);
  auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("detach of 10 tracepoints: " << ms << " ms (timed in bench/, not asserted here)");
}

namespace {

// q0: a per-CPU hash { u64 id } → { u64 n; u64 sum; } of `capacity` entries, never attached.
Plan big_map_plan(uint32_t capacity) {
  Plan plan;
  plan.c_source = fmt::format(R"(
struct q0_key_t {{ u64 id; }};
struct q0_value_t {{ u64 n; u64 sum; }};
BPF_PERCPU_HASH(q0_values, struct q0_key_t, struct q0_value_t, {});
)",
                              capacity);
  PlanQuery q;
  q.name = "big";
  q.keys = {PlanField{"id", ValueKind::Unsigned, 0, 8, Display::None}};
  q.key_size = 8;
  q.value_map = "q0_values";
  q.value_size = 16;
  q.aggregates = {aggregate("count()", AggKind::Count), aggregate("sum", AggKind::Sum, 8)};
  q.columns = {"id", "count()", "sum"};
  plan.queries = {q};
  return plan;
}

// Fills keys 0..n-1 with n = 1 and sum = key on every CPU; returns how many updates failed.
uint64_t fill(int fd, uint64_t n, uint32_t ncpus) {
  std::vector<uint64_t> value(2 * ncpus);
  uint64_t failed = 0;
  for (uint64_t k = 0; k < n; ++k) {
    for (uint32_t c = 0; c < ncpus; ++c) {
      value[2 * c] = 1;
      value[2 * c + 1] = k;
    }
    if (bpf_update_elem(fd, &k, value.data(), BPF_ANY) != 0) ++failed;
  }
  return failed;
}

// Rows whose count or sum is not what fill() wrote.
uint64_t wrong_rows(const std::vector<ResultRow>& rows, uint32_t ncpus) {
  uint64_t bad = 0;
  for (const auto& r : rows) {
    uint64_t id = std::get<uint64_t>(r.cells[0]);
    if (std::get<uint64_t>(r.cells[1]) != ncpus || std::get<uint64_t>(r.cells[2]) != id * ncpus)
      ++bad;
  }
  return bad;
}

}  // namespace

TEST_CASE("root: without batch operations, iteration reads and deletes every entry") {
  if (!can_load_bpf()) return;
  Plan plan = big_map_plan(4096);
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  MapReader maps;
  REQUIRE(maps.open(*loaded.bpf, plan) == "");
  maps.disable_batch();
  const uint32_t ncpus = static_cast<uint32_t>(libbpf_num_possible_cpus());
  int table = loaded.bpf->map_fd("q0_values");
  REQUIRE(fill(table, 3000, ncpus) == 0);

  plan.queries[0].cumulative = true;  // first a read that keeps the entries
  auto rows = build_rows(plan.queries[0], maps.read(plan.queries[0]), {});
  CHECK(rows.size() == 3000);
  plan.queries[0].cumulative = false;
  rows = build_rows(plan.queries[0], maps.read(plan.queries[0]), {});
  CHECK(rows.size() == 3000);
  CHECK(wrong_rows(rows, ncpus) == 0);
  CHECK(!maps.used_batch());
  uint64_t next_key = 0;
  CHECK(bpf_get_next_key(table, nullptr, &next_key) != 0);
}

TEST_CASE("root: batch reads return and delete every entry of a 100k-key per-CPU hash") {
  if (!can_load_bpf()) return;
  Plan plan = big_map_plan(131072);
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  MapReader maps;
  REQUIRE(maps.open(*loaded.bpf, plan) == "");
  const uint32_t ncpus = static_cast<uint32_t>(libbpf_num_possible_cpus());
  int table = loaded.bpf->map_fd("q0_values");
  constexpr uint64_t kKeys = 100'000;
  REQUIRE(fill(table, kKeys, ncpus) == 0);

  auto t0 = std::chrono::steady_clock::now();
  QuerySnapshot s = maps.read(plan.queries[0]);
  auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("read+delete of 100k keys (" << ncpus << " CPUs, batch=" << maps.used_batch()
                                       << "): " << ms << " ms");
  CHECK(maps.used_batch());
  REQUIRE(s.values.count() == kKeys);
  CHECK(wrong_rows(build_rows(plan.queries[0], s, {}), ncpus) == 0);
  uint64_t next_key = 0;
  CHECK(bpf_get_next_key(table, nullptr, &next_key) != 0);  // empty after the read
}

// A function of this test binary for uprobes to hit; noinline and extern "C" so its symbol is
// plain and it is really called.
extern "C" __attribute__((noinline)) int bpfql_smoke_uprobe_target(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}

TEST_CASE("root: uprobes and uretprobes on this binary count its calls") {
  if (!can_load_bpf()) return;
  char exe[4096] = {};
  REQUIRE(readlink("/proc/self/exe", exe, sizeof exe - 1) > 0);
  Plan plan;
  plan.c_source = R"(
BPF_PERCPU_ARRAY(q0_values, u64, 1);
BPF_PERCPU_ARRAY(q1_values, u64, 1);
int q0_probe0(struct pt_regs *ctx) { int k = 0; u64 *v = q0_values.lookup(&k); if (v) (*v)++; return 0; }
int q1_probe0(struct pt_regs *ctx) { int k = 0; u64 *v = q1_values.lookup(&k); if (v) (*v)++; return 0; }
)";
  PlanQuery q0, q1;
  PlanAttach entry;
  entry.kind = ProbeKind::Uprobe;
  entry.function = "q0_probe0";
  entry.binary = exe;
  entry.symbol = "bpfql_smoke_uprobe_target";
  entry.pid = getpid();
  entry.spec = "uprobe:test:bpfql_smoke_uprobe_target";
  PlanAttach ret = entry;
  ret.kind = ProbeKind::Uretprobe;
  ret.function = "q1_probe0";
  q0.name = "calls";
  q0.attaches = {entry};
  q0.value_map = "q0_values";
  q0.value_size = 8;
  q0.aggregates = {aggregate("count()", AggKind::Count)};
  q0.columns = {"count()"};
  q1 = q0;
  q1.name = "returns";
  q1.attaches = {ret};
  q1.value_map = "q1_values";
  plan.queries = {q0, q1};

  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  Attachments probes;
  AttachResult attached = attach_all(*loaded.bpf, plan, probes);
  REQUIRE_MESSAGE(attached.error.empty(), attached.error);
  MapReader maps;
  REQUIRE(maps.open(*loaded.bpf, plan) == "");
  int sum = 0;
  for (int i = 0; i < 50; ++i) sum += bpfql_smoke_uprobe_target(i);
  CHECK(sum == 50 * 51 / 2);
  CHECK(u64_cell(build_rows(plan.queries[0], maps.read(plan.queries[0]), {})[0].cells[0]) == 50);
  CHECK(u64_cell(build_rows(plan.queries[1], maps.read(plan.queries[1]), {})[0].cells[0]) == 50);

  PlanQuery missing = q0;
  missing.attaches[0].symbol = "bpfql_no_such_symbol";
  Plan bad = plan;
  bad.queries = {missing};
  Attachments none;
  CHECK(attach_all(*loaded.bpf, bad, none).error ==
        std::string("cannot attach uprobe:test:bpfql_smoke_uprobe_target for query calls: symbol "
                    "'bpfql_no_such_symbol' not found in ") +
            exe);
  detach_all(std::move(loaded.bpf), probes, /*background=*/true);
}

TEST_CASE("root: a software perf event samples on every CPU") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source = R"(
BPF_PERCPU_ARRAY(q0_values, u64, 1);
int q0_probe0(struct bpf_perf_event_data *ctx) { int k = 0; u64 *v = q0_values.lookup(&k); if (v) (*v)++; return 0; }
)";
  PlanQuery q;
  q.name = "samples";
  PlanAttach a;
  a.kind = ProbeKind::Profile;
  a.function = "q0_probe0";
  a.spec = "profile:hz:999";
  a.perf_type = 1;    // PERF_TYPE_SOFTWARE
  a.perf_config = 0;  // PERF_COUNT_SW_CPU_CLOCK
  a.sample_freq = 999;
  q.attaches = {a};
  q.value_map = "q0_values";
  q.value_size = 8;
  q.aggregates = {aggregate("count()", AggKind::Count)};
  q.columns = {"count()"};
  plan.queries = {q};
  LoadResult loaded = load_program(plan);
  REQUIRE_MESSAGE(loaded.bpf, loaded.error);
  Attachments probes;
  AttachResult attached = attach_all(*loaded.bpf, plan, probes);
  REQUIRE_MESSAGE(attached.error.empty(), attached.error);
  CHECK(probes.owned().size() == online_cpus().size());
  MapReader maps;
  REQUIRE(maps.open(*loaded.bpf, plan) == "");
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  CHECK(u64_cell(build_rows(plan.queries[0], maps.read(plan.queries[0]), {})[0].cells[0]) > 10);
  detach_all(std::move(loaded.bpf), probes, /*background=*/true);
}

TEST_CASE("root: probes the machine lacks are refused with the reason") {
  if (!can_load_bpf()) return;
  Plan plan;
  plan.c_source = "int q0_probe0(void *ctx) { return 0; }";
  PlanQuery q;
  q.name = "lacking";
  PlanAttach a;
  a.function = "q0_probe0";
  bool has_pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0;
  bool has_kprobes = access("/sys/kernel/debug/tracing/kprobe_events", F_OK) == 0 ||
                     access("/sys/bus/event_source/devices/kprobe", F_OK) == 0;
  if (has_pmu) MESSAGE("this machine has a PMU: the hardware refusal is not tested");
  if (has_kprobes) MESSAGE("this kernel has kprobes: the kprobe refusal is not tested");
  if (!has_pmu) {
    a.kind = ProbeKind::Hardware;
    a.spec = "hardware:cycles";
    a.perf_type = 0;  // PERF_TYPE_HARDWARE
    a.sample_period = 1000000;
    q.attaches = {a};
    plan.queries = {q};
    LoadResult loaded = load_program(plan);
    REQUIRE_MESSAGE(loaded.bpf, loaded.error);
    Attachments probes;
    CHECK(attach_all(*loaded.bpf, plan, probes).error ==
          "cannot attach hardware:cycles for query lacking: this machine has no hardware "
          "performance counters (no PMU; a virtual machine?)");
  }
  if (!has_kprobes) {
    a.kind = ProbeKind::Kprobe;
    a.spec = "kprobe:vfs_read";
    a.symbol = "vfs_read";
    q.attaches = {a};
    plan.queries = {q};
    LoadResult loaded = load_program(plan);
    REQUIRE_MESSAGE(loaded.bpf, loaded.error);
    Attachments probes;
    CHECK(attach_all(*loaded.bpf, plan, probes).error ==
          "cannot attach kprobe:vfs_read for query lacking: this kernel has no kprobes "
          "(CONFIG_KPROBES is off)");
  }
}

TEST_CASE("root: Ctrl-C ends run_plan with a final print of every aggregating query") {
  if (!can_load_bpf()) return;
  Plan plan = counting_plan();
  plan.queries[0].interval_ns = 10'000'000'000;  // never reached: only the final partial print
  std::string path = fmt::format("/tmp/bpfql_smoke_sigint_{}.json", getpid());
  RunOptions options;
  options.format = OutputFormat::Json;
  options.output_path = path;
  pid_t runner = static_cast<pid_t>(syscall(SYS_gettid));
  std::thread interrupter([runner] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // load (~0.3 s) and attach
    call_getppid(7);
    syscall(SYS_tgkill, getpid(), runner, SIGINT);  // at the run_plan thread, where it is blocked
  });
  int status = run_plan(plan, options);
  interrupter.join();
  CHECK(status == 0);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);
  CHECK(out.find("\"query\":\"bypid\"") != std::string::npos);
  CHECK(out.find("\"query\":\"total\"") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("root: maps created ahead are handed over only with every attribute equal") {
  if (!can_load_bpf()) return;
  std::vector<PlanMap> maps = {{"pre_vals", BPF_MAP_TYPE_PERCPU_HASH, 16, 8, 1024, 0},
                               {"pre_events", BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0, 0},
                               {"pre_start", BPF_MAP_TYPE_TASK_STORAGE, 4, 8, 0, BPF_F_NO_PREALLOC}};
  MapPrecreation pre(maps, 3);
  ImageMap vals = image_map_of(maps[0], 3);
  ImageMap other = vals;
  other.max_entries = 2048;
  CHECK(pre.take(other) == -1);  // another size: created by the loader instead
  int fd = pre.take(vals);
  REQUIRE(fd >= 0);
  bpf_map_info info{};
  uint32_t len = sizeof info;
  REQUIRE(bpf_obj_get_info_by_fd(fd, &info, &len) == 0);
  CHECK(info.type == BPF_MAP_TYPE_PERCPU_HASH);
  CHECK(info.key_size == 16);
  CHECK(info.max_entries == 1024);
  close(fd);
  CHECK(pre.take(vals) == -1);  // handed over once
  ImageMap events = image_map_of(maps[1], 3);
  CHECK(events.max_entries == 3);  // one per possible CPU
  int events_fd = pre.take(events);
  CHECK(events_fd >= 0);
  if (events_fd >= 0) close(events_fd);
  // A map that needs BTF is left to the loader.
  CHECK(pre.take(image_map_of(maps[2], 3)) == -1);
}
