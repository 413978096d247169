// The generated C on the real thing (root, with kernel headers where libbcc looks for them):
// every golden program compiles with libbcc's own flags and every function passes the verifier;
// and one program is attached to count known events, so the in-kernel slot arithmetic is checked
// against compiler/buckets.h. Without root or headers each case says why and passes.
#include <bcc/BPF.h>
#include <doctest/doctest.h>
#include <linux/bpf.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>

#include "compiler/buckets.h"
#include "compiler/codegen/codegen.h"
#include "runtime/compile/bpf_elf.h"
#include "runtime/load/bpf_object.h"
#include "runtime/compile/clang_compile.h"
#include "runtime/compile/compile_request.h"
#include "runtime/kernel/kernel_btf.h"
#include "support/check_helpers.h"

namespace fs = std::filesystem;
using namespace bpfql;

namespace {

const fs::path kGoldenDir = fs::path(BPFQL_SOURCE_DIR) / "tests/compiler/golden";

// "" when libbcc can compile and load here, else why not.
std::string cannot_load() {
  if (geteuid() != 0) return "not root";
  utsname u{};
  uname(&u);
  fs::path headers = fs::path("/lib/modules") / u.release / "build";
  if (!fs::exists(headers)) return "no kernel headers at " + headers.string();
  return "";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<ebpf::USDT> usdt_probes(const Plan& plan) {
  std::vector<ebpf::USDT> out;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.kind == ProbeKind::Usdt)
        out.emplace_back(a.binary, a.provider, a.usdt_name, a.function);
  return out;
}

struct LoadResult {
  bool ok = false;
  std::string log;  // libbcc's and the verifier's messages
};

// Runs `work` in a child process whose stderr is captured; ok when it returns 0. LLVM exits the
// whole process on some errors (a stack over 512 bytes), and one broken program must fail one
// check, not the test binary.
template <typename Work>
LoadResult in_child(Work work) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    _exit(work());
  }
  close(fds[1]);
  LoadResult result;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    result.log.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

// Compiles the plan's C with libbcc and loads every function through the verifier.
LoadResult load_in_child(const Plan& plan) {
  return in_child([&] {
    ebpf::BPF bpf;
    auto status = bpf.init(plan.c_source, compile_cflags(), usdt_probes(plan));
    if (!status.ok()) {
      fprintf(stderr, "init: %s\n", status.msg().c_str());
      return 2;
    }
    for (const auto& q : plan.queries) {
      for (const auto& a : q.attaches) {
        int fd = -1;
        auto loaded = bpf.load_func(a.function, static_cast<bpf_prog_type>(program_type_of(a)), fd);
        if (!loaded.ok()) {
          fprintf(stderr, "load %s: %s\n", a.function.c_str(), loaded.msg().c_str());
          return 3;
        }
      }
    }
    return 0;
  });
}

// The same through bpfql's one-pass compile of the plain C and its own loader (as a session
// does).
LoadResult load_plain_in_child(const Plan& plan) {
  return in_child([&] {
    auto object = compile_plain_c(plan.c_plain);
    if (!object) {
      fprintf(stderr, "clang: %s\n", object.error().c_str());
      return 2;
    }
    std::vector<ElfFunction> functions;
    for (const auto& q : plan.queries)
      for (const auto& a : q.attaches) functions.push_back({a.function, program_type_of(a)});
    auto image = image_from_elf(*object, functions,
                                static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)));
    if (!image) {
      fprintf(stderr, "image: %s\n", image.error().c_str());
      return 4;
    }
    auto patched = with_constants(*image, plan.constants);
    if (!patched) return 5;
    auto loaded = BpfObject::load(*patched);
    if (!loaded) {
      fprintf(stderr, "load %s: %s\n", loaded.error().function.c_str(),
              loaded.error().message.c_str());
      return 3;
    }
    return 0;
  });
}

}  // namespace

TEST_CASE("every golden program's plain C compiles in one pass and passes the verifier") {
  if (geteuid() != 0) {
    MESSAGE("skipped: not root");
    return;
  }
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    if (entry.path().extension() != ".yml") continue;
    CAPTURE(entry.path().filename().string());
    auto program = testing::check_yaml(read_file(entry.path()));
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE(plan.has_value());
    if (plan->c_plain.empty()) continue;
    LoadResult result = load_plain_in_child(*plan);
    CHECK_MESSAGE(result.ok, entry.path().filename().string() << " does not load:\n" << result.log);
    ++loaded;
  }
  CHECK(loaded >= 10);
}

TEST_CASE("every golden program compiles with libbcc and passes the verifier") {
  if (auto why = cannot_load(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    if (entry.path().extension() != ".yml") continue;
    CAPTURE(entry.path().filename().string());
    auto program = testing::check_yaml(read_file(entry.path()));
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
    bool missing_binary = false;
    for (const auto& q : plan->queries)
      for (const auto& a : q.attaches)
        if (!a.binary.empty() && !fs::exists(a.binary)) missing_binary = true;
    if (missing_binary) {
      MESSAGE("skipped " << entry.path().filename().string()
                         << ": its binary is not on this machine");
      continue;
    }
    LoadResult result = load_in_child(*plan);
    CHECK_MESSAGE(result.ok, entry.path().filename().string() << " does not load:\n" << result.log);
    ++loaded;
  }
  CHECK(loaded >= 10);
}

TEST_CASE("the largest keys, events and string buffers fit the BPF stack") {
  if (auto why = cannot_load(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  // Every item at its maximum: long literals (a branch per byte would make the verifier walk
  // 2^n paths), 256-byte strings compared and searched, in a key, an event and filter buffers.
  const char* queries[] = {R"(
name: literals
probe: tracepoint:syscalls:sys_enter_openat
strlen: 200
where: args.filename == "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" || startswith(args.filename, "/usr/lib/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") || contains(args.filename, "cccccccccccccccccccccccccccccccccccccccc") || comm in ("p00", "p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11", "p12", "p13", "p14", "p15", "p16", "p17", "p18", "p19", "p20", "p21", "p22", "p23", "p24", "p25", "p26", "p27", "p28", "p29", "p30", "p31", "p32", "p33", "p34", "p35", "p36", "p37", "p38", "p39") || comm == args.filename
select: count()
group_by: comm
)",
                           R"(
name: keys
probe: tracepoint:syscalls:sys_enter_openat
strlen: 160
where:
  - contains(comm, "a")
  - args.filename != comm
select: count(), hist(args.flags), min(args.mode), max(args.mode), avg(args.dfd), stats(args.flags)
group_by:
  - args.filename
  - comm
  - pid
  - kstack
)",
                           R"(
name: events
probe: tracepoint:sched:sched_process_exec
strlen: 256
where: contains(args.filename, "bin")
select: args.filename, comm, pid, kstack, ustack, ts, cpu
)",
                           R"(
name: buffers
probe: uprobe:c:openat
strlen: 256
where:
  - contains(str(arg0), "a")
  - contains(str(arg1), "b")
  - str(arg2) == str(arg3)
  - startswith(str(arg4), "c")
select: count()
group_by: str(arg5)
)"};
  for (const char* yaml : queries) {
    auto program = testing::check_yaml(yaml);
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
    LoadResult result = load_in_child(*plan);
    CHECK_MESSAGE(result.ok, plan->queries[0].name << " does not load:\n" << result.log);
    if (plan->c_plain.empty()) continue;
    LoadResult plain = load_plain_in_child(*plan);
    CHECK_MESSAGE(plain.ok, plan->queries[0].name << "'s plain C does not load:\n" << plain.log);
  }
}

namespace {

// "[ITEM as PREFIX0, ..., ITEM as PREFIX<n-1>, MORE]": a select of many items.
std::string items(const std::string& item, const std::string& prefix, int n,
                  const std::string& more = "") {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + item + " as " + prefix + std::to_string(i);
  return out + (more.empty() ? "" : ", " + more) + "]";
}

}  // namespace

TEST_CASE("events over 1 KiB and many reads of one field compile and pass the verifier") {
  if (auto why = cannot_load(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  // Events larger than one inlined memset (kMaxInlineMemset), up to the per-CPU value limit,
  // one with stacks (zeroed up to them); many reads of one tracepoint field or function argument
  // (each loaded once: the verifier refuses loads through `args + offset` kept in a register).
  const std::string queries[] = {
      "name: strings\nprobe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\n"
      "select: [args.filename, str(args.filename) as a, str(args.filename) as b, "
      "str(args.filename) as c]\n",
      "name: integers\nprobe: tracepoint:syscalls:sys_enter_write\nselect: " +
          items("args.count + 1", "c", 130) + "\n",
      "name: largest\nprobe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nselect: " +
          items("args.filename", "s", 127) + "\n",
      "name: stacks\nprobe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nselect: " +
          items("args.filename", "s", 8, "kstack, ustack") + "\n",
      "name: hists\nprobe: tracepoint:syscalls:sys_enter_write\nselect: " +
          items("hist(args.count)", "h", 30) + "\n",
      "name: sums\nprobe: tracepoint:syscalls:sys_enter_write\nselect: " +
          items("sum(args.count)", "s", 30) + "\ngroup_by: comm\n",
      "name: arguments\nprobe: uprobe:c:write\nselect: " + items("hist(arg2)", "h", 30) + "\n",
  };
  for (const std::string& yaml : queries) {
    auto program = testing::check_yaml(yaml);
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
    LoadResult result = load_in_child(*plan);
    CHECK_MESSAGE(result.ok, plan->queries[0].name << " does not load:\n" << result.log);
    if (plan->c_plain.empty()) continue;
    LoadResult plain = load_plain_in_child(*plan);
    CHECK_MESSAGE(plain.ok, plan->queries[0].name << "'s plain C does not load:\n" << plain.log);
  }
}

namespace {

struct Values {
  uint64_t n;
  uint64_t sum;
  uint64_t min;
  uint64_t max;
};
struct CommKey {
  char comm[16];
};
struct CommSlotKey {
  CommKey key;
  uint64_t slot;
};
struct CountMin {
  uint64_t n;
  int64_t min;
  int64_t max;  // hidden: bounds percentile(retval, 50) (compiler/check/percentile_bounds.h)
};

constexpr const char* kWorkerComm = "bpfqlcgtest";

// Runs `work` in a child named kWorkerComm, and waits for it.
template <class Work>
void run_worker(Work work) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_NAME, kWorkerComm);
    work();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
}

int hist_slot(uint64_t v) { return v == 0 ? 1 : 63 - __builtin_clzll(v) + 2; }
int lhist_slot(int64_t v, int64_t min, int64_t max, int64_t step) {
  if (v < min) return 0;
  if (v >= max) return buckets::lhist_slots(min, max, step) - 1;
  return static_cast<int>(1 + (v - min) / step);
}

}  // namespace

TEST_CASE("in the kernel, aggregates and histogram slots are what buckets.h says") {
  if (auto why = cannot_load(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  auto program = testing::check_yaml(R"(
queries:
  - name: sizes
    probe: tracepoint:syscalls:sys_enter_read
    where: comm == "bpfqlcgtest" && startswith(comm, "bpfql") && contains(comm, "cgt")
    select: count(), sum(args.count), min(args.count), max(args.count), hist(args.count), lhist(args.count, 0, 1000, 100), percentile(args.count, 50)
  - name: strings
    probe: tracepoint:raw_syscalls:sys_enter
    where:
      - args.id == 0
      - comm in ("nope", "bpfqlcgtest", "other")
      - '!(comm in ("x", "bpfqlcgtes"))'
      - comm != "bpfqlcgtesx"
      - startswith(comm, "bpfqlcgtes")
      - '!startswith(comm, "bpfqlcgtesx")'
      - contains(comm, "test")
      - '!contains(comm, "tests")'
    select: count()
  - name: returns
    probe: tracepoint:syscalls:sys_exit_read
    where: comm == "bpfqlcgtest"
    select: count(), min(retval), hist(retval), lhist(retval, -10, 10, 1), percentile(retval, 50)
    group_by: comm
)");
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
  REQUIRE(plan->queries[0].value_size == sizeof(Values));
  REQUIRE(plan->queries[2].key_size == sizeof(CommKey));
  REQUIRE(plan->queries[2].value_size == sizeof(CountMin));

  ebpf::BPF bpf;
  auto status = bpf.init(plan->c_source);
  REQUIRE_MESSAGE(status.ok(), status.msg());
  // Where the plan says: sizes' body runs in strings' program on raw_syscalls:sys_enter (fusion.h).
  CHECK(plan->queries[0].attaches[0].tracepoint == "raw_syscalls:sys_enter");
  std::set<std::pair<std::string, std::string>> attached;
  for (const auto& q : plan->queries)
    for (const auto& a : q.attaches)
      if (attached.emplace(a.tracepoint, a.function).second) {
        // A program reading raw_syscalls' raw tracepoint arguments attaches there (fusion.h).
        if (a.raw_record)
          REQUIRE_MESSAGE(
              bpf.attach_raw_tracepoint(a.tracepoint.substr(a.tracepoint.find(':') + 1),
                                        a.function)
                  .ok(),
              a.function);
        else
          REQUIRE_MESSAGE(bpf.attach_tracepoint(a.tracepoint, a.function).ok(), a.function);
      }
  CHECK(plan->queries[0].attaches[0].raw_record);
  const std::vector<uint64_t> counts = {
      0, 1, 5, 16, 17, 100, 999, 1000, 5000, 1 << 20, (1ull << 40) + 3};
  // read(-1, NULL, n): the tracepoints see `count` = n, and the return value -EBADF.
  run_worker([&] {
    for (uint64_t n : counts) (void)!read(-1, nullptr, n);
  });
  bpf.detach_tracepoint("syscalls:sys_enter_read");
  bpf.detach_tracepoint("syscalls:sys_exit_read");
  bpf.detach_raw_tracepoint("sys_enter");

  // Keyless: per-CPU arrays, merged over CPUs as the runtime does.
  std::vector<Values> per_cpu;
  REQUIRE(bpf.get_percpu_array_table<Values>("q0_vals").get_value(0, per_cpu).ok());
  Values total{0, 0, UINT64_MAX, 0};
  for (const auto& v : per_cpu) {
    if (v.n == 0) continue;
    total.n += v.n;
    total.sum += v.sum;
    total.min = std::min(total.min, v.min);
    total.max = std::max(total.max, v.max);
  }
  uint64_t sum = 0;
  for (uint64_t c : counts) sum += c;
  CHECK(total.n == counts.size());
  CHECK(total.sum == sum);
  CHECK(total.min == 0);
  CHECK(total.max == (1ull << 40) + 3);

  auto slots_of = [&](const char* map, int slots) {
    std::vector<uint64_t> merged(static_cast<size_t>(slots));
    auto table = bpf.get_percpu_array_table<uint64_t>(map);
    for (int i = 0; i < slots; ++i) {
      std::vector<uint64_t> cpus;
      REQUIRE(table.get_value(i, cpus).ok());
      for (uint64_t c : cpus) merged[static_cast<size_t>(i)] += c;
    }
    return merged;
  };
  std::vector<uint64_t> hist(buckets::kHistSlots),
      lhist(static_cast<size_t>(buckets::lhist_slots(0, 1000, 100))),
      loglin(buckets::kLogLinearSlots);
  for (uint64_t c : counts) {
    hist[static_cast<size_t>(hist_slot(c))]++;
    lhist[static_cast<size_t>(lhist_slot(static_cast<int64_t>(c), 0, 1000, 100))]++;
    loglin[static_cast<size_t>(buckets::log_linear_slot(c))]++;
  }
  CHECK(slots_of("q0_h4", buckets::kHistSlots) == hist);
  CHECK(slots_of("q0_h5", buckets::lhist_slots(0, 1000, 100)) == lhist);
  CHECK(slots_of("q0_h6", buckets::kLogLinearSlots) == loglin);

  // String tests, each of which would fail on a byte off (read is syscall 0 on x86_64).
  std::vector<uint64_t> string_count;
  REQUIRE(bpf.get_percpu_array_table<uint64_t>("q1_vals").get_value(0, string_count).ok());
  uint64_t matched = 0;
  for (uint64_t c : string_count) matched += c;
  CHECK(matched == counts.size());

  // Keyed by comm, signed values: every read returned -EBADF (-9).
  CommKey key{};
  std::strncpy(key.comm, kWorkerComm, sizeof key.comm);
  std::vector<CountMin> values;
  REQUIRE(bpf.get_percpu_hash_table<CommKey, CountMin>("q2_vals").get_value(key, values).ok());
  uint64_t n = 0;
  for (const auto& v : values) {
    if (v.n == 0) continue;
    n += v.n;
    CHECK(v.min == -9);
    CHECK(v.max == -9);
  }
  CHECK(n == counts.size());
  auto slot_counts = [&](const char* map) {
    std::map<uint64_t, uint64_t> out;
    auto entries = bpf.get_percpu_hash_table<CommSlotKey, uint64_t>(map).get_table_offline();
    for (const auto& [k, cpus] : entries) {
      CHECK(std::string(k.key.comm) == kWorkerComm);
      for (uint64_t c : cpus) out[k.slot] += c;
    }
    return out;
  };
  CHECK(slot_counts("q2_h2") == std::map<uint64_t, uint64_t>{{0, counts.size()}});
  CHECK(slot_counts("q2_h3") ==
        std::map<uint64_t, uint64_t>{
            {static_cast<uint64_t>(lhist_slot(-9, -10, 10, 1)), counts.size()}});
  // A negative value's percentile slot: the second half, by magnitude (buckets.h).
  CHECK(slot_counts("q2_h4") ==
        std::map<uint64_t, uint64_t>{
            {static_cast<uint64_t>(buckets::log_linear_slot_signed(-9)), counts.size()}});
}

TEST_CASE("in the kernel, ppid is the parent's pid, read at the offsets of the kernel's BTF") {
  if (auto why = cannot_load(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  auto parent = kernel_member_offset("task_struct", "real_parent");
  auto tgid = kernel_member_offset("task_struct", "tgid");
  if (!parent || !tgid) {
    MESSAGE("skipped: the kernel has no BTF for task_struct");
    return;
  }
  auto program = testing::check_yaml(R"(
name: parents
probe: tracepoint:syscalls:sys_enter_getppid
where: comm == "bpfqlcgtest"
select: count()
group_by: pid
)");
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  // The fixture catalog knows no BTF: make the key ppid, with this kernel's offsets.
  program->queries[0].keys[0].expr->node = BuiltinRef{Builtin::Ppid, 0};
  program->queries[0].task_offsets = TaskOffsets{*parent, *tgid};
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));

  ebpf::BPF bpf;
  auto status = bpf.init(plan->c_source);
  REQUIRE_MESSAGE(status.ok(), status.msg());
  REQUIRE(bpf.attach_tracepoint("syscalls:sys_enter_getppid", "q0_p0").ok());
  run_worker([] {
    for (int i = 0; i < 3; ++i) (void)getppid();
  });
  bpf.detach_tracepoint("syscalls:sys_enter_getppid");

  struct PpidKey {
    uint32_t ppid;
    uint32_t pad;
  };
  auto entries = bpf.get_percpu_hash_table<PpidKey, uint64_t>("q0_vals").get_table_offline();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].first.ppid == static_cast<uint32_t>(getpid()));
  uint64_t n = 0;
  for (uint64_t c : entries[0].second) n += c;
  CHECK(n == 3);
}
