// The shortcut that spares libbcc's compile its scan of /proc/kallsyms: the kernel versions it
// answers for, and (as root, with libbcc compiling for real) that libbcc's own question does
// reach bpfql's answer and that the program still compiles and loads.
#include "runtime/compile/kallsyms_shortcut.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include "runtime/compile/compile_libbcc.h"

using namespace bpfql;

TEST_CASE("bpf_probe_read_kernel exists from Linux 5.5 on") {
  CHECK(release_has_probe_read_kernel("6.18.44-fc-v669"));
  CHECK(release_has_probe_read_kernel("5.5.0"));
  CHECK(release_has_probe_read_kernel("5.10.0-28-amd64"));
  CHECK(release_has_probe_read_kernel("10.0"));
  CHECK_FALSE(release_has_probe_read_kernel("5.4.0-150-generic"));
  CHECK_FALSE(release_has_probe_read_kernel("4.19.0"));
  CHECK_FALSE(release_has_probe_read_kernel("garbage"));
  CHECK_FALSE(release_has_probe_read_kernel(""));
}

TEST_CASE("root: libbcc's compile asks its kallsyms question of the shortcut, and compiles") {
  if (geteuid() != 0) {
    MESSAGE("skipping: compiling and verifying with libbcc needs root");
    return;
  }
  Plan plan;
  plan.c_source = R"(
BPF_ARRAY(q0_counts, u64, 1);
int q0_p0(void *ctx) {
  char comm[16];
  bpf_probe_read_kernel(comm, sizeof(comm), ctx);
  int zero = 0;
  u64 *n = q0_counts.lookup(&zero);
  if (n && comm[0]) (*n)++;
  return 0;
}
)";
  PlanQuery q;
  q.name = "q";
  PlanAttach a;
  a.kind = ProbeKind::Tracepoint;
  a.function = "q0_p0";
  a.tracepoint = "raw_syscalls:sys_enter";
  q.attaches = {a};
  plan.queries = {q};
  int before = KallsymsShortcut::answered();
  CompileOutcome outcome = compile_libbcc(compile_request(plan, false));
  REQUIRE_MESSAGE(outcome.image.has_value(), outcome.error << "\n" << outcome.log);
  CHECK(KallsymsShortcut::answered() == before + 1);
  REQUIRE(outcome.image->functions.size() == 1);
  CHECK(outcome.image->functions[0].code.size() > 0);
}
