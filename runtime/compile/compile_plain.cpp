#include "runtime/compile/compile_plain.h"

#include <bpf/libbpf.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>

#include "runtime/compile/bpf_elf.h"
#include "runtime/compile/clang_compile.h"
#include "runtime/compile/stderr_capture.h"

namespace bpfql {
namespace {

// LINUX_VERSION_CODE of the running kernel, from its release ("6.1.0-13-amd64").
uint32_t running_kernel_version() {
  utsname u{};
  if (uname(&u) != 0) return 0;
  unsigned a = 0, b = 0, c = 0;
  if (std::sscanf(u.release, "%u.%u.%u", &a, &b, &c) < 2) return 0;
  return (a << 16) + (b << 8) + std::min(c, 255u);
}

}  // namespace

CompileOutcome compile_plain(const CompileRequest& request) {
  CompileOutcome r;
  if (request.c_plain.empty()) {
    r.error = "the program has no plain C (USDT probes, or pt_regs off x86-64)";
    return r;
  }
  StderrCapture capture;  // clang's error count, LLVM's messages: for the log, not the terminal
  auto object = compile_plain_c(request.c_plain);
  std::string printed = capture.finish();
  if (!object) {
    r.error = "clang: " + object.error() + printed;
    return r;
  }
  std::vector<ElfFunction> functions;
  for (const auto& f : request.functions) functions.push_back({f.name, f.prog_type});
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) {
    r.error = "cannot count the possible CPUs";
    return r;
  }
  auto image = image_from_elf(*object, functions, static_cast<uint32_t>(cpus));
  if (!image) {
    r.error = image.error();
    return r;
  }
  image->kern_version = running_kernel_version();  // kprobes on kernels before 5.0
  r.image = std::move(*image);
  r.plain = true;
  r.log = "compiled the plain C in one clang pass (libbcc not run)\n";
  return r;
}

}  // namespace bpfql
