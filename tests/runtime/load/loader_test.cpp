// What the loader and attacher make of libbcc's output: verifier summaries, noise, CPU lists.
#include <doctest/doctest.h>

#include <cstdlib>

#include "runtime/load/attach.h"
#include "runtime/load/loader.h"
#include "runtime/compile/stderr_capture.h"
#include "runtime/compile/verifier_log.h"

using namespace bpfql;

namespace {

// As libbcc 0.26 prints a rejection (kernel 6.18), with the usual noise around it.
const char* kRejected = R"(sha1 socket not available Address family not supported by protocol
WARNING: cannot get prog tag, ignore saving source with program tag
bpf: Failed to load program: Permission denied
0: R1=ctx() R10=fp0
; int *p = (int*)(long)bpf_get_prandom_u32(); return *p; } @ main.c:13
0: (85) call bpf_get_prandom_u32#7    ; R0=scalar()
3: (61) r0 = *(u32 *)(r0 +0)
R0 invalid mem access 'scalar'
processed 4 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0

)";

}  // namespace

TEST_CASE("a verifier log boils down to its message and the C line it came from") {
  CHECK(verifier_summary(kRejected) ==
        "R0 invalid mem access 'scalar' (at: int *p = (int*)(long)bpf_get_prandom_u32(); return "
        "*p; } @ main.c:13)");
}

TEST_CASE("a load failure without a log gives the kernel's reason") {
  CHECK(verifier_summary("bpf: Failed to load program: Operation not permitted\n") ==
        "Operation not permitted");
  CHECK(verifier_summary("nothing about loading here\n").empty());
}

TEST_CASE("libbcc's per-program noise is filtered, everything else kept") {
  CHECK(without_libbcc_noise(kRejected).find("sha1") == std::string::npos);
  CHECK(without_libbcc_noise(kRejected).find("prog tag") == std::string::npos);
  CHECK(without_libbcc_noise(kRejected).find("invalid mem access") != std::string::npos);
  CHECK(without_libbcc_noise("a\nsha1 socket not available x\nb\n") == "a\nb\n");
}

TEST_CASE("first_lines joins the first non-empty lines") {
  CHECK(first_lines("\none\n\ntwo\nthree\n", 2) == "one; two");
  CHECK(first_lines("", 2).empty());
}

TEST_CASE("kernel CPU lists") {
  CHECK(parse_cpu_list("0-3,6,8-9\n") == std::vector<int>{0, 1, 2, 3, 6, 8, 9});
  CHECK(parse_cpu_list("0") == std::vector<int>{0});
  CHECK(parse_cpu_list("").empty());
}

TEST_CASE("kernel headers are needed only where libbcc compiles") {
  bpfql::Plan plain;
  plain.c_source = "int x;";
  plain.c_plain = "int x;";
  bpfql::Plan usdt = plain;
  usdt.c_plain.clear();  // USDT: libbcc only
  const std::string nowhere = "/nonexistent-bpfql-modules";
  unsetenv("BPFQL_COMPILER");
  CHECK_FALSE(bpfql::kernel_headers_problem(plain, "6.1.0", nowhere).has_value());
  auto problem = bpfql::kernel_headers_problem(usdt, "6.1.0", nowhere);
  REQUIRE(problem.has_value());
  CHECK(problem->find("no kernel headers for 6.1.0") != std::string::npos);
  CHECK(problem->find("setup-host.sh") != std::string::npos);
  setenv("BPFQL_COMPILER", "libbcc", 1);
  CHECK(bpfql::kernel_headers_problem(plain, "6.1.0", nowhere).has_value());
  unsetenv("BPFQL_COMPILER");
}
