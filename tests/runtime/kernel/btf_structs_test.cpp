// Kernel structs read from the running kernel's BTF, and the fixture unit tests use instead
// (tests/fixtures/btf/structs.txt): the fixture is this kernel's BTF, struct for struct.
// BPFQL_WRITE_BTF_FIXTURE=1 rewrites the fixture from the running kernel (after a kernel change).
// The fixture names the kernel release it was taken from: on another kernel (a machine of this
// kind booted a newer build) the comparison is only reported, since the unit tests run on the
// fixture, not on the live kernel, and integration tests check the live one.
#include <sys/utsname.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "compiler/check/kernel_struct_text.h"
#include "runtime/kernel/btf_structs.h"
#include "runtime/kernel/kernel_btf.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {
namespace {

const char* kFixture = BPFQL_FIXTURE_DIR "/btf/structs.txt";
// The structs the fixture holds: what the unit tests and the library queries reach.
const char* kStructs[] = {"task_struct", "sched_entity", "cfs_rq", "sock", "sock_common",
                          "__kernel_timespec", "signal_struct", "mm_struct", "files_struct",
                          "fdtable", "file", "path", "dentry", "qstr", "inode", "socket"};

bool have_btf() { return std::filesystem::exists("/sys/kernel/btf/vmlinux"); }

std::string kernel_release() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "";
}

constexpr std::string_view kReleaseLine = "# kernel: ";

}  // namespace

TEST_CASE("BTF: task_struct members with offsets and types, anonymous members flattened") {
  if (!have_btf()) return;
  auto task = btf_kernel_struct(running_kernel_btf(), "task_struct");
  REQUIRE(task);
  const KernelMember* pid = task->member("pid");
  const KernelMember* tgid = task->member("tgid");
  REQUIRE(pid);
  REQUIRE(tgid);
  CHECK(tgid->offset == pid->offset + 4);
  CHECK(pid->type.kind == KernelType::Kind::Integer);
  CHECK(pid->type.size == 4);
  CHECK(pid->type.is_signed);
  const KernelMember* parent = task->member("real_parent");
  REQUIRE(parent);
  CHECK(parent->type.spelling() == "struct task_struct *");
  const KernelMember* comm = task->member("comm");
  REQUIRE(comm);
  CHECK(comm->type.spelling() == "char[16]");
  CHECK(task->member("se")->type.spelling() == "struct sched_entity");
  TracefsCatalog catalog;
  CHECK(catalog.has_kernel_btf());
  CHECK(catalog.kernel_member_offset("task_struct", "tgid") == tgid->offset);
  CHECK_FALSE(btf_kernel_struct(running_kernel_btf(), "no_such_struct_anywhere"));
}

TEST_CASE("BTF: the fixture is this kernel's BTF for the structs it holds") {
  if (!have_btf()) return;
  std::string live;
  for (const char* name : kStructs) {
    auto s = btf_kernel_struct(running_kernel_btf(), name);
    REQUIRE_MESSAGE(s, name);
    live += kernel_struct_text(*s);
  }
  if (std::getenv("BPFQL_WRITE_BTF_FIXTURE")) {
    std::ofstream(kFixture) << "# Extracted from the BTF of the kernel the fixtures come from\n"
                            << "# (tests/runtime/kernel/btf_structs_test.cpp writes it).\n"
                            << kReleaseLine << kernel_release() << "\n"
                            << live;
  }
  std::ifstream in(kFixture);
  std::stringstream text;
  text << in.rdbuf();
  std::string from;
  for (std::string line; std::getline(text, line);)
    if (line.rfind(kReleaseLine, 0) == 0) from = line.substr(kReleaseLine.size());
  REQUIRE_MESSAGE(!from.empty(), "tests/fixtures/btf/structs.txt names no '# kernel: RELEASE'");
  auto parsed = parse_kernel_structs(text.str());
  REQUIRE(parsed);
  std::string fixture;
  for (const auto& s : *parsed) fixture += kernel_struct_text(s);
  if (from != kernel_release()) {
    MESSAGE("the BTF fixture comes from kernel " << from << ", this is " << kernel_release()
            << (fixture == live ? " (the same structs)" : " (structs differ: rerun with BPFQL_WRITE_BTF_FIXTURE=1)"));
    return;
  }
  CHECK_MESSAGE(fixture == live, "tests/fixtures/btf/structs.txt differs from this kernel's BTF; "
                                 "rerun with BPFQL_WRITE_BTF_FIXTURE=1 if the kernel changed");
}

}  // namespace bpfql
