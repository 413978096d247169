// TracefsCatalog on this machine (tracefs, ELF files through libbcc) and FixtureCatalog on the
// fixtures. Tests that need the live tracefs or a particular binary say so and return early.
#include "runtime/kernel/tracefs_catalog.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "runtime/kernel/elf_catalog.h"
#include "tests/support/fixture_catalog.h"

using namespace bpfql;
namespace fs = std::filesystem;

namespace {

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::ranges::find(names, name) != names.end();
}

const UsdtProbeInfo* find_probe(const std::vector<UsdtProbeInfo>& probes, std::string_view provider,
                                std::string_view name) {
  for (const UsdtProbeInfo& p : probes)
    if (p.provider == provider && p.name == name) return &p;
  return nullptr;
}

// Checks what the kernel guarantees of every format: common_type first, fields in record order,
// none overlapping.
void check_layout(const TracepointFormat& f) {
  CAPTURE(f.category + ":" + f.name);
  REQUIRE(!f.fields.empty());
  CHECK(f.id > 0);
  CHECK(f.fields[0].name == "common_type");
  int end = 0;
  for (const TracepointField& field : f.fields) {
    CAPTURE(field.name);
    CHECK(field.offset >= end);
    end = field.offset + field.size;
    if (field.kind == FieldKind::CharArray) CHECK(field.array_len == field.size);
    if (field.kind == FieldKind::DataLoc || field.kind == FieldKind::CharPtr)
      CHECK(!field.is_signed);
  }
  CHECK(f.record_size() == end);
}

}  // namespace

TEST_CASE("every tracepoint format of the running kernel parses") {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    MESSAGE("skipped: " << catalog.tracefs_problem());
    return;
  }
  std::vector<std::string> names = catalog.tracepoint_names();
  CHECK(names.size() > 100);
  CHECK(std::ranges::is_sorted(names));
  CHECK(contains(names, "syscalls:sys_enter_openat"));
  CHECK(contains(names, "sched:sched_switch"));
  CHECK_FALSE(
      std::ranges::any_of(names, [](const std::string& n) { return n.starts_with("ftrace:"); }));
  for (const std::string& full : names) {
    size_t colon = full.find(':');
    Result<TracepointFormat> format =
        catalog.load_tracepoint(full.substr(0, colon), full.substr(colon + 1));
    REQUIRE_MESSAGE(format.has_value(), full << ": " << (format ? "" : format.error().message));
    CHECK(format->category + ":" + format->name == full);
    check_layout(*format);
  }
}

TEST_CASE("live tracepoints: the field kinds the checker relies on") {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    MESSAGE("skipped: " << catalog.tracefs_problem());
    return;
  }
  std::optional<TracepointFormat> openat = catalog.tracepoint("syscalls", "sys_enter_openat");
  REQUIRE(openat);
  REQUIRE(openat->field("filename"));
  CHECK(openat->field("filename")->kind == FieldKind::CharPtr);
  std::optional<TracepointFormat> exec = catalog.tracepoint("sched", "sched_process_exec");
  REQUIRE(exec);
  CHECK(exec->field("filename")->kind == FieldKind::DataLoc);
  std::optional<TracepointFormat> sw = catalog.tracepoint("sched", "sched_switch");
  REQUIRE(sw);
  CHECK(sw->field("prev_comm")->kind == FieldKind::CharArray);
  CHECK(sw->field("prev_comm")->array_len == 16);

  CHECK_FALSE(catalog.tracepoint("syscalls", "sys_enter_nosuch"));
  CHECK(catalog.load_tracepoint("syscalls", "sys_enter_nosuch")
            .error()
            .message.starts_with("no tracepoint syscalls:sys_enter_nosuch (no "));
  CHECK_FALSE(catalog.tracepoint("ftrace", "print"));  // the tracer's records, not tracepoints
  CHECK_FALSE(catalog.tracepoint("..", "sched"));
  CHECK_FALSE(catalog.tracepoint("sched", "*"));
}

TEST_CASE("kprobe availability matches tracefs and the kprobe PMU") {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    MESSAGE("skipped: " << catalog.tracefs_problem());
    return;
  }
  bool has_kprobes = fs::exists(fs::path(catalog.tracefs_root()) / "kprobe_events") ||
                     fs::exists("/sys/bus/event_source/devices/kprobe");
  if (has_kprobes) {
    CHECK(catalog.kprobes_unavailable() == "");
  } else {
    CHECK(catalog.kprobes_unavailable() ==
          "kprobes are not available on this kernel (no kprobe_events in tracefs; CONFIG_KPROBES "
          "is off)");
  }
}

TEST_CASE("hardware events: available, or a reason naming perf_event_open") {
  TracefsCatalog catalog;
  std::string reason = catalog.hardware_events_unavailable();
  MESSAGE("hardware events: " << (reason.empty() ? "available" : reason));
  if (!fs::exists("/sys/bus/event_source/devices/cpu") && geteuid() == 0) {
    // A VM without a PMU (this project's test machines): the reason must say so.
    CHECK(reason.starts_with("no hardware PMU on this machine (perf_event_open: "));
    CHECK(reason.ends_with("; no /sys/bus/event_source/devices/cpu)"));
  }
  if (!reason.empty()) CHECK(reason.find("perf_event_open: ") != std::string::npos);
  CHECK(catalog.hardware_events_unavailable() == reason);  // cached, and stable
}

TEST_CASE("a catalog without tracefs says how to mount it") {
  TracefsCatalog catalog(fs::path("/nonexistent-bpfql-tracefs"));
  CHECK(catalog.tracefs_problem() ==
        "tracefs is not mounted (no /nonexistent-bpfql-tracefs/events): run `mount -t tracefs "
        "none /sys/kernel/tracing` (or scripts/setup-host.sh)");
  CHECK(catalog.tracefs_root() == "");
  CHECK(catalog.tracepoint_names().empty());
  CHECK_FALSE(catalog.tracepoint("sched", "sched_switch"));
  CHECK(catalog.load_tracepoint("sched", "sched_switch").error().message ==
        catalog.tracefs_problem());
  if (!fs::exists("/sys/bus/event_source/devices/kprobe"))
    CHECK(catalog.kprobes_unavailable().ends_with(catalog.tracefs_problem()));
}

TEST_CASE("a tracefs-shaped folder of fixtures reads like the kernel's") {
  fs::path root = fs::temp_directory_path() / ("bpfql-tracefs-test-" + std::to_string(getpid()));
  fs::create_directories(root);
  fs::create_directory_symlink(fs::path(BPFQL_FIXTURE_DIR) / "tracepoints", root / "events");
  {
    TracefsCatalog catalog(root);
    CHECK(catalog.tracefs_problem() == "");
    CHECK(catalog.tracefs_root() == root.string());
    CHECK(catalog.tracepoint_names() == FixtureCatalog().tracepoint_names());
    std::optional<TracepointFormat> f = catalog.tracepoint("syscalls", "sys_enter_read");
    REQUIRE(f);
    CHECK(f->field_names() == std::vector<std::string>{"__syscall_nr", "fd", "buf", "count"});
    if (!fs::exists("/sys/bus/event_source/devices/kprobe"))
      CHECK(catalog.kprobes_unavailable().starts_with("kprobes are not available on this kernel"));
  }
  fs::remove_all(root);
}

TEST_CASE("binaries: short library names, programs on PATH, paths, and what is not ELF") {
  TracefsCatalog catalog;
  std::optional<std::string> libc = catalog.resolve_binary("c");
  REQUIRE(libc);
  CHECK(libc->ends_with("/libc.so.6"));
  CHECK(fs::path(*libc).is_absolute());
  CHECK(catalog.resolve_binary("libc") == libc);
  CHECK(catalog.resolve_binary(*libc) == libc);
  CHECK(catalog.has_symbol(*libc, "getpid"));
  CHECK(catalog.has_symbol(*libc, "malloc"));
  CHECK_FALSE(catalog.has_symbol(*libc, "no_such_function_in_libc"));
  CHECK_FALSE(catalog.has_symbol(*libc, "environ"));  // a variable, not a function
  // The names a misspelt symbol is matched against: functions only, sorted, each once.
  std::vector<std::string> functions = catalog.function_symbols(*libc);
  CHECK(std::ranges::binary_search(functions, "malloc"));
  CHECK(std::ranges::binary_search(functions, "getpid"));
  CHECK_FALSE(std::ranges::binary_search(functions, "environ"));
  CHECK(std::ranges::is_sorted(functions));
  CHECK(std::ranges::adjacent_find(functions) == functions.end());

  CHECK_FALSE(catalog.resolve_binary("no-such-library-or-program"));
  CHECK(catalog.find_binary("no-such-library-or-program").error().message ==
        "no program on PATH or library named 'no-such-library-or-program'");
  CHECK(catalog.find_binary("/nonexistent/prog").error().message ==
        "no such file '/nonexistent/prog'");
  CHECK(catalog.find_binary("/etc").error().message == "'/etc' is not a regular file");
  CHECK(catalog.find_binary("/etc/passwd").error().message ==
        "'/etc/passwd' is not an ELF binary or library");
  CHECK(catalog.find_binary("").error().message == "empty binary name");
}

TEST_CASE("USDT probes of python3.11") {
  TracefsCatalog catalog;
  if (!fs::exists("/usr/bin/python3.11")) {
    MESSAGE("skipped: no /usr/bin/python3.11");
    return;
  }
  std::optional<std::string> python = catalog.resolve_binary("/usr/bin/python3.11");
  REQUIRE(python);
  std::vector<UsdtProbeInfo> probes = catalog.usdt_probes(*python);
  const UsdtProbeInfo* entry = find_probe(probes, "python", "function__entry");
  REQUIRE_MESSAGE(entry, "python:function__entry missing from " << *python);
  CHECK(entry->arg_sizes == std::vector<int>{8, 8, -4});  // filename, funcname, line number
  CHECK(std::ranges::is_sorted(
      probes, {}, [](const UsdtProbeInfo& p) { return std::tie(p.provider, p.name); }));
  CHECK(elf_usdt_probes(fs::read_symlink("/proc/self/exe")).empty());  // this test has no notes
  CHECK(catalog.usdt_probes("/nonexistent/prog").empty());
}

TEST_CASE("FixtureCatalog: every fixture parses") {
  FixtureCatalog catalog;
  std::vector<std::string> names = catalog.tracepoint_names();
  CHECK(names.size() >= 80);
  CHECK(contains(names, "raw_syscalls:sys_enter"));
  CHECK(contains(names, "syscalls:sys_exit_getppid"));
  for (const std::string& full : names) {
    size_t colon = full.find(':');
    Result<TracepointFormat> format =
        catalog.load_tracepoint(full.substr(0, colon), full.substr(colon + 1));
    REQUIRE_MESSAGE(format.has_value(), full << ": " << (format ? "" : format.error().message));
    check_layout(*format);
  }
  CHECK(catalog.tracepoint("block", "block_rq_issue")->field("cmd")->kind == FieldKind::DataLoc);
  CHECK(catalog.tracepoint("sched", "sched_switch")->field("next_comm")->kind ==
        FieldKind::CharArray);
  CHECK_FALSE(catalog.tracepoint("random", "urandom_read"));  // gone since Linux 5.18
}

TEST_CASE("FixtureCatalog: probe availability and binaries are what the test sets") {
  FixtureCatalog catalog;
  CHECK(catalog.kprobes_unavailable() == "");
  CHECK(catalog.hardware_events_unavailable() == "");
  catalog.set_kprobes_unavailable("kprobes are not available on this kernel");
  catalog.set_hardware_events_unavailable("no hardware PMU on this machine");
  CHECK(catalog.kprobes_unavailable() == "kprobes are not available on this kernel");
  CHECK(catalog.hardware_events_unavailable() == "no hardware PMU on this machine");

  CHECK(catalog.resolve_binary("c") == "/usr/lib/x86_64-linux-gnu/libc.so.6");
  CHECK(catalog.has_symbol("/usr/lib/x86_64-linux-gnu/libc.so.6", "malloc"));
  CHECK_FALSE(catalog.has_symbol("/usr/lib/x86_64-linux-gnu/libc.so.6", "malloc2"));
  CHECK(find_probe(catalog.usdt_probes("/usr/bin/python3.11"), "python", "function__entry"));

  catalog.add_binary(
      {"/opt/app/server", {"server"}, {"handle_request"}, {{"app", "request__start", {8, -4}}}});
  CHECK(catalog.resolve_binary("server") == "/opt/app/server");
  CHECK(catalog.has_symbol("/opt/app/server", "handle_request"));
  CHECK(catalog.usdt_probes("/opt/app/server").size() == 1);
  catalog.add_binary({"/opt/app/server", {}, {}, {}});  // replaces
  CHECK_FALSE(catalog.resolve_binary("server"));
  CHECK_FALSE(catalog.has_symbol("/opt/app/server", "handle_request"));

  catalog.clear_binaries();
  CHECK_FALSE(catalog.resolve_binary("c"));
  CHECK(catalog.usdt_probes("/usr/bin/python3.11").empty());
}

TEST_CASE("FixtureCatalog's default binaries agree with the real files on this machine") {
  TracefsCatalog real;
  for (const FakeBinary& fake : FixtureCatalog::default_binaries()) {
    CAPTURE(fake.path);
    if (!fs::exists(fake.path)) {
      MESSAGE("skipped: no " << fake.path);
      continue;
    }
    CHECK(real.resolve_binary(fake.path) == fake.path);
    for (const std::string& alias : fake.aliases) {
      CAPTURE(alias);
      CHECK(real.resolve_binary(alias) == fake.path);
    }
    for (const std::string& symbol : fake.symbols) {
      CAPTURE(symbol);
      CHECK(real.has_symbol(fake.path, symbol));
    }
    std::vector<UsdtProbeInfo> probes = real.usdt_probes(fake.path);
    REQUIRE(probes.size() == fake.usdt.size());
    for (size_t i = 0; i < probes.size(); ++i) {
      CAPTURE(fake.usdt[i].name);
      CHECK(probes[i].provider == fake.usdt[i].provider);
      CHECK(probes[i].name == fake.usdt[i].name);
      CHECK(probes[i].arg_sizes == fake.usdt[i].arg_sizes);
    }
  }
}

TEST_CASE("kernel struct offsets come from the running kernel's BTF") {
  TracefsCatalog catalog;
  if (!fs::exists("/sys/kernel/btf/vmlinux")) {
    MESSAGE("skipped: no /sys/kernel/btf/vmlinux");
    return;
  }
  std::optional<int> pid = catalog.kernel_member_offset("task_struct", "pid");
  std::optional<int> tgid = catalog.kernel_member_offset("task_struct", "tgid");
  REQUIRE(pid);
  REQUIRE(tgid);
  CHECK(*tgid == *pid + 4);  // pid_t pid; pid_t tgid; side by side in every kernel
  CHECK(catalog.kernel_member_offset("task_struct", "real_parent"));
  CHECK_FALSE(catalog.kernel_member_offset("task_struct", "no_such_member"));
  CHECK_FALSE(catalog.kernel_member_offset("no_such_struct", "pid"));
}

TEST_CASE("FixtureCatalog: kernel struct offsets are settable") {
  FixtureCatalog catalog;
  CHECK(catalog.kernel_member_offset("task_struct", "tgid") == 1268);
  CHECK(catalog.kernel_member_offset("task_struct", "real_parent") == 1280);
  CHECK_FALSE(catalog.kernel_member_offset("task_struct", "pid"));
  catalog.set_kernel_member_offset("task_struct", "real_parent", std::nullopt);
  CHECK_FALSE(catalog.kernel_member_offset("task_struct", "real_parent"));
  catalog.set_kernel_member_offset("task_struct", "pid", 1264);
  CHECK(catalog.kernel_member_offset("task_struct", "pid") == 1264);
}

TEST_CASE("FixtureCatalog: a copy is a separate catalog") {
  FixtureCatalog base;
  FixtureCatalog copy = base;
  copy.set_kprobes_unavailable("no kprobes here");
  copy.clear_binaries();
  CHECK(base.kprobes_unavailable() == "");
  CHECK(base.resolve_binary("c"));
  CHECK(copy.tracepoint("sched", "sched_switch")->id ==
        base.tracepoint("sched", "sched_switch")->id);
}
