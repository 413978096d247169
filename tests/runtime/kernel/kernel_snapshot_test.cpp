// Kernel snapshots (runtime/kernel/): packing, the file format, the catalog served from a
// snapshot, and BTF subsets. No root: the BTF tests read /sys/kernel/btf/vmlinux (mode 0444)
// and skip where the kernel has none.
#include <bpf/btf.h>

#include <filesystem>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "compiler/check/check.h"
#include "compiler/syntax/query.h"
#include "runtime/kernel/btf_subset.h"
#include "runtime/kernel/kernel_snapshot.h"
#include "runtime/kernel/packed_bytes.h"
#include "runtime/kernel/snapshot_catalog.h"
#include "runtime/kernel/kernel_btf.h"
#include "runtime/kernel/tracepoint_directory.h"
#include "tests/support/fixture_catalog.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

const std::string kShippedSnapshot = BPFQL_FIXTURE_DIR "/kernels/library-6.18.kernel";

// A snapshot of the fixture tracepoints (tests/fixtures/tracepoints), without BTF.
KernelSnapshot fixture_snapshot() {
  KernelSnapshot s;
  s.release = "6.18.44-fc-v669";
  s.machine = "x86_64";
  s.kprobes_unavailable = "kprobes are not available on this kernel (CONFIG_KPROBES is off)";
  fs::path dir = BPFQL_FIXTURE_DIR "/tracepoints";
  TracepointDirectory tracepoints(dir);
  for (const std::string& name : tracepoints.names()) {
    auto colon = name.find(':');
    auto text = read_text_file(dir / name.substr(0, colon) / name.substr(colon + 1) / "format");
    REQUIRE(text);
    s.tracepoint_formats[name] = *text;
  }
  return s;
}

TEST_CASE("packed bytes: round trip, and a damaged or truncated text is an error") {
  std::string raw;
  for (int i = 0; i < 5000; ++i) raw += static_cast<char>((i * 7919) % 251);
  std::string packed = pack_bytes(raw);
  auto back = unpack_bytes(packed, raw.size());
  REQUIRE(back);
  CHECK(*back == raw);
  CHECK(unpack_bytes(packed, raw.size() + 1).error() ==
        fmt::format("{} bytes where {} were recorded", raw.size(), raw.size() + 1));
  CHECK(unpack_bytes(packed, raw.size() - 1).error().find("does not inflate") != std::string::npos);
  CHECK_FALSE(unpack_bytes(packed.substr(0, packed.size() - 4), raw.size()));
  std::string damaged = packed;
  damaged[10] = '!';
  CHECK(unpack_bytes(damaged, raw.size()).error().find("invalid base64") != std::string::npos);
  CHECK(unpack_bytes(pack_bytes(""), 0) == std::string());
}

TEST_CASE("kernel snapshot: encode then decode gives back every part") {
  KernelSnapshot s = fixture_snapshot();
  s.btf = std::string("\x9f\xeb\x01\x00", 4) + std::string(100, 'x');
  s.exported_for = {"queries/"};
  auto back = decode_snapshot(encode_snapshot(s), "mem.kernel");
  REQUIRE(back);
  CHECK(back->release == s.release);
  CHECK(back->machine == s.machine);
  CHECK(back->kprobes_unavailable == s.kprobes_unavailable);
  CHECK(back->hardware_events_unavailable.empty());
  CHECK(back->tracepoint_formats == s.tracepoint_formats);
  CHECK(back->btf == s.btf);
  CHECK(back->exported_for == s.exported_for);
}

TEST_CASE("kernel snapshot: what is not one is an error naming the file") {
  for (std::string text : {"", "not json", "{}", R"({"kind": "something-else"})",
                           R"({"kind": "bpfql-kernel-snapshot", "format_version": 1})"}) {
    CAPTURE(text);
    auto s = decode_snapshot(text, "x.kernel");
    REQUIRE_FALSE(s);
    CHECK(s.error().loc.file == "x.kernel");
    CHECK(s.error().message.find("not a bpfql kernel snapshot") != std::string::npos);
  }
  auto newer = decode_snapshot(R"({"kind": "bpfql-kernel-snapshot", "format_version": 99})", "x");
  REQUIRE_FALSE(newer);
  CHECK(newer.error().message.find("format 99 is not one this bpfql reads") != std::string::npos);
}

// The checker cannot tell the snapshot from the fixture directory it was made of.
TEST_CASE("snapshot catalog: checks a query exactly as the catalog it was taken from") {
  FixtureCatalog fixtures;
  auto snapshot = SnapshotCatalog::from(fixture_snapshot(), "fixtures.kernel");
  REQUIRE(snapshot);
  CHECK((*snapshot)->tracepoint_names() == fixtures.tracepoint_names());
  for (std::string_view name : {"sched:sched_switch", "syscalls:sys_enter_openat",
                                "block:block_rq_issue", "sock:inet_sock_set_state"}) {
    CAPTURE(name);
    auto colon = name.find(':');
    auto a = fixtures.tracepoint(name.substr(0, colon), name.substr(colon + 1));
    auto b = (*snapshot)->tracepoint(name.substr(0, colon), name.substr(colon + 1));
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->field_names() == b->field_names());
    CHECK(a->record_size() == b->record_size());
  }
  CHECK_FALSE((*snapshot)->tracepoint("sched", "no_such"));
  CHECK((*snapshot)->kprobes_unavailable().find("CONFIG_KPROBES") != std::string::npos);
  CHECK((*snapshot)->kernel_release() == "6.18.44-fc-v669");
  CHECK_FALSE((*snapshot)->has_kernel_btf());

  auto file = load_query_text("q.yml", "probe: tracepoint:sched:sched_switch\n"
                                       "select: count()\ngroup_by: args.prev_comm\n");
  REQUIRE(file);
  REQUIRE(bind_params(*file, {}));
  CHECK(check_file(*file, **snapshot, {}));
  auto typo = load_query_text("q.yml", "probe: tracepoint:sched:sched_switch\n"
                                       "select: count()\ngroup_by: args.prev_comn\n");
  REQUIRE(typo);
  REQUIRE(bind_params(*typo, {}));
  auto from_snapshot = check_file(*typo, **snapshot, {});
  auto from_fixtures = check_file(*typo, fixtures, {});
  REQUIRE_FALSE(from_snapshot);
  REQUIRE_FALSE(from_fixtures);
  CHECK(from_snapshot.error().message == from_fixtures.error().message);
  CHECK(from_snapshot.error().loc.col == from_fixtures.error().loc.col);
}

TEST_CASE("snapshot catalog: requires: is checked against the snapshot's kernel") {
  auto snapshot = SnapshotCatalog::from(fixture_snapshot(), "fixtures.kernel");
  REQUIRE(snapshot);
  auto check_text = [&](const std::string& requires_line) {
    auto file = load_query_text("q.yml", "probe: tracepoint:sched:sched_switch\n" + requires_line +
                                             "\nselect: count()\n");
    REQUIRE(file);
    REQUIRE(bind_params(*file, {}));
    return check_file(*file, **snapshot, {});
  };
  CHECK(check_text("requires: {kernel: \"5.8\"}"));
  CHECK(check_text("requires: {kernel: \">= 6.18.44\", probes: [tracepoint, uprobe]}"));
  auto too_new = check_text("requires: {kernel: \"6.19\"}");
  REQUIRE_FALSE(too_new);
  CHECK(too_new.error().message == "requires kernel 6.19 or later; this kernel is 6.18.44-fc-v669");
  CHECK(too_new.error().loc.line == 2);
  CHECK(too_new.error().loc.col == 21);
  auto kprobes = check_text("requires: {probes: [tracepoint, kprobe]}");
  REQUIRE_FALSE(kprobes);
  CHECK(kprobes.error().message ==
        "requires kprobe probes: kprobes are not available on this kernel (CONFIG_KPROBES is off)");
  CHECK(kprobes.error().loc.col == 33);
  auto btf = check_text("requires: {btf: true}");
  REQUIRE_FALSE(btf);
  CHECK(btf.error().message.find("requires the kernel's BTF") == 0);
}

TEST_CASE("requires: bad values are load errors at the value") {
  auto load = [](const std::string& line) {
    return load_query_text("q.yml", "probe: tracepoint:sched:sched_switch\n" + line +
                                        "\nselect: count()\n");
  };
  auto kernel = load("requires: {kernel: six}");
  REQUIRE_FALSE(kernel);
  CHECK(kernel.error().message == "'kernel' must be a release such as \"5.8\" or \">= 5.8\", not 'six'");
  auto kind = load("requires: {probes: [kprobes]}");
  REQUIRE_FALSE(kind);
  CHECK(kind.error().message.find("unknown probe kind 'kprobes' in 'requires'") == 0);
  CHECK(kind.error().message.find("did you mean 'kprobe'?") != std::string::npos);
  auto key = load("requires: {kernal: \"5.8\"}");
  REQUIRE_FALSE(key);
  CHECK(key.error().message.find("did you mean 'kernel'?") != std::string::npos);
}

TEST_CASE("BTF subset: task_struct alone, small, with the running kernel's offsets") {
  const btf* running = running_kernel_btf();
  if (!running) {
    MESSAGE("skipped: this kernel has no BTF");
    return;
  }
  auto subset = btf_subset(running, {"task_struct"});
  REQUIRE(subset);
  MESSAGE("task_struct subset: " << subset->size() << " bytes");
  CHECK(subset->size() < 300'000);  // all of vmlinux BTF is ~5.5 MB
  KernelSnapshot s;
  s.release = "6.18";
  s.btf = *subset;
  auto catalog = SnapshotCatalog::from(s, "btf.kernel");
  REQUIRE(catalog);
  for (const char* member : {"tgid", "pid", "real_parent", "comm", "mm"}) {
    CAPTURE(member);
    CHECK((*catalog)->kernel_member_offset("task_struct", member) ==
          kernel_member_offset("task_struct", member));
  }
  CHECK_FALSE((*catalog)->kernel_member_offset("task_struct", "no_such_member"));
  // mm_struct is only pointed to: declared, not described.
  CHECK_FALSE((*catalog)->kernel_member_offset("mm_struct", "pgd"));
  CHECK(btf__find_by_name_kind((*catalog)->kernel_btf(), "mm_struct", BTF_KIND_FWD) > 0);
}

TEST_CASE("the shipped snapshot of this machine's kernel decodes and holds the library's tracepoints") {
  auto catalog = SnapshotCatalog::open(kShippedSnapshot);
  REQUIRE_MESSAGE(catalog, (catalog ? "" : catalog.error().message));
  const KernelSnapshot& s = (*catalog)->snapshot();
  CHECK(s.partial());
  CHECK(s.release.starts_with("6.18"));
  CHECK((*catalog)->tracepoint("raw_syscalls", "sys_enter"));
  CHECK((*catalog)->tracepoint("sched", "sched_switch"));
  CHECK(s.kprobes_unavailable.find("kprobes are not available") == 0);
}

}  // namespace
}  // namespace bpfql
