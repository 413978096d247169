// Host checks, compile, verify (see loader.h).
#include "runtime/loader.h"

#include <bcc/bpf_module.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "runtime/process_watch.h"
#include "runtime/stderr_capture.h"
#include "runtime/verifier_log.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

bool needs_tracefs(const Plan& plan) {
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.kind != ProbeKind::Profile && a.kind != ProbeKind::Software &&
          a.kind != ProbeKind::Hardware)
        return true;
  return false;
}

bpf_prog_type program_type(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::Tracepoint:
      return BPF_PROG_TYPE_TRACEPOINT;
    case ProbeKind::Profile:
    case ProbeKind::Software:
    case ProbeKind::Hardware:
      return BPF_PROG_TYPE_PERF_EVENT;
    default:
      return BPF_PROG_TYPE_KPROBE;  // kprobes, uprobes and USDT
  }
}

std::string compile_failure(const std::string& log) {
  std::string errors = log.empty() ? "(libbcc printed nothing)" : log;
  return fmt::format(
      "failed to compile the generated BPF program (a bpfql bug; `bpfql compile` prints the "
      "C):\n{}",
      errors);
}

std::string load_failure(const PlanQuery& q, const std::string& function, const std::string& msg,
                         const std::string& log) {
  std::string summary = verifier_summary(log);
  if (summary.empty()) summary = msg;
  return fmt::format(
      "the kernel's verifier rejected the program for query {}: {}; run with -v for the whole log",
      q.name, summary.empty() ? function : summary);
}

// libbcc prints no verifier log when the kernel says E2BIG (the verifier gave up after 1M
// instructions): verify the function again in a module of our own, with a log buffer the
// kernel fills from the end (the tail says where it gave up). Slow (seconds): only for -v.
std::string reverify_with_log(const Plan& plan, const PlanAttach& a) {
  if (!usdt_probes(plan).empty()) return "";  // init() prepends USDT readers we cannot rebuild
  StderrCapture quiet;  // libbcc prints the log too; ours is the one kept
  ebpf::BPFModule module(0);
  if (module.load_string(plan.c_source, nullptr, 0) != 0) return "";
  auto* insns = reinterpret_cast<const bpf_insn*>(module.function_start(a.function));
  if (insns == nullptr) return "";
  std::string log(1 << 20, '\0');
  int fd = module.bcc_func_load(program_type(a.kind), a.function.c_str(), insns,
                                static_cast<int>(module.function_size(a.function)),
                                module.license(), module.kern_version(), 1, log.data(),
                                static_cast<unsigned>(log.size()));
  if (fd >= 0) close(fd);
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return fmt::format("verifier log for {} (its last {} KiB):\n{}\n", a.function,
                     log.size() / 1024, log);
}

}  // namespace

std::optional<std::string> check_privileges() {
  if (geteuid() != 0)
    return "loading BPF programs needs root (CAP_BPF and CAP_PERFMON): run bpfql with sudo";
  return std::nullopt;
}

std::optional<std::string> check_host(const Plan& plan) {
  if (auto problem = check_privileges()) return problem;
  utsname u{};
  uname(&u);
  std::error_code ec;
  if (!fs::exists(fs::path("/lib/modules") / u.release / "build", ec))
    return fmt::format(
        "no kernel headers for {}: run scripts/setup-host.sh (links the distribution's headers "
        "where libbcc looks)",
        u.release);
  // libbcc 0.26 finds tracepoint ids and probe events under debugfs' tracing directory.
  if (needs_tracefs(plan) && !fs::exists("/sys/kernel/debug/tracing/events", ec))
    return "tracefs is not mounted where libbcc looks (/sys/kernel/debug/tracing): run "
           "`mount -t debugfs none /sys/kernel/debug` (tracefs appears under it) or "
           "scripts/setup-host.sh";
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.pid >= 0)
        if (std::string missing = missing_process(a.pid); !missing.empty()) return missing;
  return std::nullopt;
}

std::vector<ebpf::USDT> usdt_probes(const Plan& plan) {
  std::vector<ebpf::USDT> out;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches) {
      if (a.kind != ProbeKind::Usdt) continue;
      if (a.pid >= 0)
        out.emplace_back(a.binary, a.pid, a.provider, a.usdt_name, a.function);
      else
        out.emplace_back(a.binary, a.provider, a.usdt_name, a.function);
    }
  return out;
}

LoadResult load_program(const Plan& plan, bool full_verifier_log) {
  LoadResult r;
  auto bpf = std::make_unique<ebpf::BPF>();
  StderrCapture capture;
  ebpf::StatusTuple st = bpf->init(plan.c_source, {}, usdt_probes(plan));
  if (!st.ok()) {
    r.log = without_libbcc_noise(capture.finish());
    if (st.msg().find("USDT") != std::string::npos || r.log.find("USDT") != std::string::npos)
      r.error = fmt::format("cannot set up the USDT probes: {}", st.msg());
    else
      r.error = compile_failure(r.log);
    return r;
  }
  // The verifier runs when a function is first loaded: do it for every attached function now, so
  // a rejection names its query and nothing is attached yet.
  std::set<std::string> loaded;
  for (const auto& q : plan.queries) {
    for (const auto& a : q.attaches) {
      if (!loaded.insert(a.function).second) continue;
      int fd = -1;
      st = bpf->load_func(a.function, program_type(a.kind), fd);
      if (!st.ok()) {
        r.log = without_libbcc_noise(capture.finish());
        r.error = load_failure(q, a.function, st.msg(), r.log);
        if (full_verifier_log && is_too_complex(r.log)) r.log += reverify_with_log(plan, a);
        return r;
      }
    }
  }
  r.log = without_libbcc_noise(capture.finish());
  r.bpf = std::move(bpf);
  return r;
}

}  // namespace bpfql
