// The pieces behind the fault handling that need no BPF: reading libbcc's "too complex" failure,
// noticing that a traced process exited, naming a missing pid, and choosing what privileges a
// Plan keeps after attach.
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "runtime/privileges.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/compile/verifier_log.h"

using namespace bpfql;

namespace {

// As libbcc 0.26 reports a program the verifier gave up on (E2BIG): no verifier log at all.
const char* kTooComplex =
    "bpf: Argument list too long. Program  too large (2234 insns), at most 4096 insns\n\n";

Plan plan_with(ValueKind kind, Display display, int pid) {
  Plan plan;
  PlanQuery q;
  q.name = "q";
  q.keys.push_back(PlanField{"k", kind, 0, 8, display});
  PlanAttach a;
  a.kind = ProbeKind::Uprobe;
  a.pid = pid;
  q.attaches.push_back(a);
  plan.queries.push_back(q);
  return plan;
}

}  // namespace

TEST_CASE("a program the verifier gave up on is reported as too complex, with what to do") {
  CHECK(is_too_complex(kTooComplex));
  CHECK(is_too_complex("BPF program is too large. Processed 1000001 insn\n"));
  CHECK_FALSE(is_too_complex("bpf: Failed to load program: Permission denied\n"));
  std::string summary = verifier_summary(kTooComplex);
  CHECK(summary.find("too complex to verify") != std::string::npos);
  CHECK(summary.find("smaller strlen") != std::string::npos);
}

TEST_CASE("a pid that names no process gets a message; a live one none") {
  CHECK(missing_process(getpid()).empty());
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  CHECK(missing_process(child) ==
        "no process with pid " + std::to_string(child) +
            " (from --pid or the query's pid:); is it running?");
  CHECK(!missing_process(0).empty());
}

TEST_CASE("ProcessWatch: a traced process's exit becomes a message naming it and its queries") {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  REQUIRE(child > 0);
  ProcessWatch watch;
  REQUIRE(watch.open(plan_with(ValueKind::Unsigned, Display::None, child)).empty());
  REQUIRE(watch.fds().size() == 1);
  int fd = watch.fds()[0];
  CHECK(watch.watches(fd));
  pollfd p{fd, POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0);  // still running
  kill(child, SIGKILL);
  CHECK(poll(&p, 1, 5000) == 1);
  std::string msg = watch.take_exit(fd);
  CHECK(msg.find("process " + std::to_string(child) + " exited") != std::string::npos);
  CHECK(msg.find("query q") != std::string::npos);
  CHECK(msg.find("still running") != std::string::npos);
  CHECK_FALSE(watch.watches(fd));
  waitpid(child, nullptr, 0);
  // Watching a process that is already gone is the missing-pid error.
  CHECK(watch.open(plan_with(ValueKind::Unsigned, Display::None, child)).find("no process") == 0);
}

TEST_CASE("after attach a Plan keeps no capability unless it symbolizes user addresses") {
  CHECK(capabilities_after_attach(plan_with(ValueKind::Unsigned, Display::None, -1)).empty());
  CHECK(capabilities_after_attach(plan_with(ValueKind::KernelStack, Display::None, -1)).empty());
  CHECK(capabilities_after_attach(plan_with(ValueKind::Unsigned, Display::Ksym, -1)).empty());
  std::vector<int> user = {CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE};
  CHECK(capabilities_after_attach(plan_with(ValueKind::UserStack, Display::None, -1)) == user);
  CHECK(capabilities_after_attach(plan_with(ValueKind::Unsigned, Display::Usym, -1)) == user);
  CHECK(capability_name(CAP_SYS_PTRACE) == "cap_sys_ptrace");
  CHECK(capability_name(CAP_BPF) == "cap_bpf");
  CHECK(capability_name(62) == "cap_62");
}
