// Host checks, compile (in a helper process, or from the cache), create maps, verify (see loader.h).
#include "runtime/load/loader.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/compile/compile_child.h"
#include "runtime/load/map_precreation.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/compile/program_cache.h"
#include "runtime/compile/stderr_capture.h"
#include "runtime/compile/verifier_log.h"

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

// The query that attaches `function` (for the message of a rejection).
const PlanQuery& query_of(const Plan& plan, const std::string& function) {
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.function == function) return q;
  return plan.queries.front();
}

// Creates the maps and loads the programs in this process. On a rejection, the message is the
// one the loader always gave (from libbcc's log on stderr).
LoadResult load_image(const Plan& plan, const ProgramImage& compiled,
                      MapPrecreation* precreated = nullptr) {
  LoadResult r;
  auto image = with_constants(compiled, plan.constants);
  if (!image) {
    r.error = "the compiled program does not fit its plan: " + image.error();
    return r;
  }
  StderrCapture capture;
  auto object = BpfObject::load(*image, precreated);
  r.log = without_libbcc_noise(capture.finish());
  if (object) {
    r.bpf = std::move(*object);
  } else if (object.error().function.empty()) {
    r.error = object.error().message;
  } else {
    const auto& [function, reason] = object.error();
    r.error = verifier_failure_message(query_of(plan, function).name, function, reason, r.log);
  }
  return r;
}

}  // namespace

std::optional<std::string> check_privileges() {
  if (geteuid() != 0)
    return "loading BPF programs needs root (CAP_BPF and CAP_PERFMON): run bpfql with sudo";
  return std::nullopt;
}

std::optional<std::string> kernel_headers_problem(const Plan& plan, const std::string& release,
                                                  const std::string& modules_dir) {
  if (compiler_for(plan) == Compiler::Plain) return std::nullopt;  // brings its own prelude
  std::error_code ec;
  if (fs::exists(fs::path(modules_dir) / release / "build", ec)) return std::nullopt;
  return fmt::format(
      "no kernel headers for {}: libbcc compiles this program (USDT probes, or "
      "BPFQL_COMPILER=libbcc) and needs them; run scripts/setup-host.sh (links the "
      "distribution's headers where libbcc looks)",
      release);
}

std::optional<std::string> check_host(const Plan& plan) {
  if (auto problem = check_privileges()) return problem;
  utsname u{};
  uname(&u);
  std::error_code ec;
  if (auto problem = kernel_headers_problem(plan, u.release)) return problem;
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

namespace {

// The program cache for one load, and what it did (for -v).
struct CacheUse {
  std::optional<ProgramCache> cache;  // nullopt: not used
  std::string key;
  std::string log;
};

CacheUse open_cache(const Plan& plan, bool use_cache) {
  CacheUse u;
  if (!use_cache) return u;
  auto key = program_cache_key(plan);
  ProgramCache cache;
  std::string problem = key ? cache.prepare() : key.error();
  if (!problem.empty()) {
    u.log = "program cache: not used: " + problem + "\n";
    return u;
  }
  u.cache = cache;
  u.key = std::move(*key);
  return u;
}

// The Plan loaded from the cache, or nullopt (a miss, or an entry the kernel now refuses).
std::optional<LoadResult> load_cached(const Plan& plan, CacheUse& u, MapPrecreation& maps) {
  if (!u.cache) return std::nullopt;
  std::string path = u.cache->path_for(u.key);
  auto image = u.cache->load(u.key);
  if (!image) {
    u.log += fmt::format("program cache: miss ({})\n", image.error());
    return std::nullopt;
  }
  LoadResult r = load_image(plan, *image, &maps);
  if (r.bpf) {
    r.log = fmt::format("program cache: hit {} (no compiler run)\n", path) + r.log;
    return r;
  }
  // Loaded before on this kernel, refused now: compile again, which says why.
  u.log += fmt::format("program cache: {} did not load ({}); compiling again\n", path, r.error);
  u.cache->forget(u.key);
  return std::nullopt;
}

}  // namespace

LoadResult load_program(const Plan& plan, bool full_verifier_log, bool use_cache) {
  int cpus = libbpf_num_possible_cpus();
  MapPrecreation maps(plan.maps, cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
  CacheUse cache = open_cache(plan, use_cache);
  if (auto cached = load_cached(plan, cache, maps)) return std::move(*cached);
  CompileOutcome compiled = compile_in_child(plan, full_verifier_log, compiler_for(plan));
  if (!compiled.image) {
    LoadResult r;
    r.error = std::move(compiled.error);
    r.log = cache.log + compiled.log;
    return r;
  }
  if (cache.cache) {
    std::string path = cache.cache->path_for(cache.key);
    std::string stored = cache.cache->store(*compiled.image, cache.key);
    cache.log += stored.empty() ? fmt::format("program cache: stored {}\n", path)
                                : "program cache: " + stored + "\n";
  }
  LoadResult r = load_image(plan, *compiled.image, &maps);
  r.log = cache.log + compiled.log + r.log;
  if (!r.bpf && compiled.plain) {
    // The verifier refused the one-pass compile's program (or a map could not be created):
    // libbcc's compile runs the verifier itself and says why with the C lines.
    if (cache.cache) cache.cache->forget(cache.key);
    r.log += "the one-pass compile's program did not load (" + r.error +
             "); compiling with libbcc, which says why with the C lines\n";
    CompileOutcome again = compile_in_child(plan, full_verifier_log, Compiler::Libbcc);
    r.log += again.log;
    if (!again.image) {
      r.error = std::move(again.error);
      return r;
    }
    LoadResult second = load_image(plan, *again.image);
    second.log = r.log + second.log;
    return second;
  }
  return r;
}

}  // namespace bpfql
