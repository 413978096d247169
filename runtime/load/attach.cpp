// Attaches every PlanAttach (see attach.h).
#include "runtime/load/attach.h"

#include <bcc/bcc_syms.h>
#include <bcc/bcc_usdt.h>
#include <bcc/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "runtime/load/attach_cookie.h"
#include "runtime/compile/stderr_capture.h"
#include "runtime/compile/verifier_log.h"
#include "runtime/load/resource_limits.h"
#include "runtime/kernel/pending_signals.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool is_return(ProbeKind k) { return k == ProbeKind::Kretprobe || k == ProbeKind::Uretprobe; }

// A reason that says what the machine lacks, when that is why an attach failed.
std::string hint(const PlanAttach& a) {
  switch (a.kind) {
    case ProbeKind::Kprobe:
    case ProbeKind::Kretprobe:
      if (!exists("/sys/bus/event_source/devices/kprobe") &&
          !exists("/sys/kernel/debug/tracing/kprobe_events"))
        return "this kernel has no kprobes (CONFIG_KPROBES is off)";
      return "";
    case ProbeKind::Hardware:
      if (!exists("/sys/bus/event_source/devices/cpu"))
        return "this machine has no hardware performance counters (no PMU; a virtual machine?)";
      return "";
    case ProbeKind::Tracepoint: {
      auto colon = a.tracepoint.find(':');
      std::string dir = "/sys/kernel/debug/tracing/events/" + a.tracepoint.substr(0, colon) + "/" +
                        a.tracepoint.substr(colon + 1);
      if (colon == std::string::npos || !exists(dir)) return "no such tracepoint in this kernel";
      return "";
    }
    default:
      return "";
  }
}

std::string failure(const PlanQuery& q, const PlanAttach& a, std::string reason,
                    const std::string& captured) {
  std::string extra = hint(a);
  std::string bcc_said = first_lines(without_libbcc_noise(captured), 2);
  if (!extra.empty())
    reason = extra;
  else if (!bcc_said.empty())
    reason += " (" + bcc_said + ")";
  return fmt::format("cannot attach {} for query {}: {}", a.spec, q.name, reason);
}

std::string errno_text(int err) { return err ? std::strerror(err) : "unknown error"; }

std::string event_name(const PlanAttach& a, size_t index) {
  std::string name = fmt::format("bpfql_{}_{}_{}", is_return(a.kind) ? "r" : "p", getpid(), index);
  return name;
}

// Each attach returns "" on success or the reason it failed; fds go into `out`.
std::string attach_tracepoint(BpfObject& bpf, int prog, const PlanAttach& a, Attachments& out) {
  auto colon = a.tracepoint.find(':');
  if (colon == std::string::npos) return "not a category:name tracepoint: " + a.tracepoint;
  std::string category = a.tracepoint.substr(0, colon), name = a.tracepoint.substr(colon + 1);
  if (bpf.program_type(a.function) == BPF_PROG_TYPE_RAW_TRACEPOINT) {
    // Raw tracepoints are named by the tracepoint alone; an event whose tracepoint has another
    // name (or none) is attached the ordinary way, with the program loaded again as such.
    errno = 0;
    int fd = bpf_attach_raw_tracepoint(prog, name.c_str());
    if (fd >= 0) {
      out.owned().push_back({fd, "", a.kind, true, true});
      return "";
    }
    // A program that reads the raw tracepoint's arguments has no record to fall back on.
    if (a.raw_record)
      return "cannot attach its raw tracepoint " + name + ": " + errno_text(errno);
    prog = bpf.reload_as(a.function, BPF_PROG_TYPE_TRACEPOINT);
    if (prog < 0) return "cannot load its program as a tracepoint program: " + errno_text(errno);
  }
  if (a.attach_cookie) return attach_tracepoint_with_cookie(prog, category, name, a.probe_index, out);
  // Linked, so that detaching the program does not wait for the perf event (attach_cookie.h);
  // the way libbcc attaches (the program set on the perf event) on kernels without perf links.
  bool no_link = false;
  std::string linked = attach_tracepoint_with_cookie(prog, category, name, 0, out, &no_link);
  if (!no_link) return linked;
  errno = 0;
  int fd = bpf_attach_tracepoint(prog, category.c_str(), name.c_str());
  if (fd < 0) return errno_text(errno);
  out.owned().push_back({fd, "", a.kind});
  return "";
}

// After a failed bpf_attach_uprobe: libbcc falls back to a tracefs event when the uprobe PMU
// refuses, and leaves that event in uprobe_events when the fallback fails too; remove it (a
// no-op when there is none). Then the reason: EINVAL on a uprobe that exists is mostly the
// kernel's "ref_ctr_offset mismatch" (another tool holds a probe at the same place with another
// USDT semaphore offset), which it only writes to its log.
std::string uprobe_failure(int err, const std::string& ev, bool semaphore) {
  bpf_detach_uprobe(ev.c_str());
  errno = err;  // for attach_all's resource_problem
  std::string reason = errno_text(err);
  if (err == EINVAL)
    reason += fmt::format(
        "; the kernel refuses a second probe on the same instruction with a different USDT "
        "semaphore offset (ref_ctr_offset; its log says \"ref_ctr_offset mismatch\"): another "
        "tool probably holds one there {}",
        semaphore ? "without this probe's semaphore, or with another"
                  : "with a semaphore (a USDT probe)");
  return reason;
}

std::string attach_kprobe(int prog, const PlanAttach& a, size_t index, Attachments& out) {
  std::string ev = event_name(a, index);
  auto type = is_return(a.kind) ? BPF_PROBE_RETURN : BPF_PROBE_ENTRY;
  errno = 0;
  int fd = bpf_attach_kprobe(prog, type, ev.c_str(), a.symbol.c_str(), 0, 0);
  if (fd < 0) return errno_text(errno);
  out.owned().push_back({fd, ev, a.kind});
  return "";
}

std::string attach_uprobe(int prog, const PlanAttach& a, size_t index, Attachments& out) {
  bcc_symbol sym{};
  if (bcc_resolve_symname(a.binary.c_str(), a.symbol.c_str(), 0, a.pid, nullptr, &sym) < 0)
    return fmt::format("symbol '{}' not found in {}", a.symbol, a.binary);
  std::string module = sym.module ? sym.module : a.binary;
  ::free(const_cast<char*>(sym.module));
  std::string ev = event_name(a, index);
  auto type = is_return(a.kind) ? BPF_PROBE_RETURN : BPF_PROBE_ENTRY;
  errno = 0;
  int fd = bpf_attach_uprobe(prog, type, ev.c_str(), module.c_str(), sym.offset, a.pid, 0);
  if (fd < 0) return uprobe_failure(errno, ev, /*semaphore=*/false);
  out.owned().push_back({fd, ev, a.kind});
  return "";
}

std::string attach_perf_event(int prog, const PlanAttach& a, Attachments& out) {
  std::vector<int> cpus = online_cpus();
  if (a.one_cpu && cpus.size() > 1) cpus.resize(1);  // interval:D: one timer, on the first CPU
  for (int cpu : cpus) {
    errno = 0;
    int fd = bpf_attach_perf_event(prog, a.perf_type, a.perf_config, a.sample_period, a.sample_freq,
                                   -1, cpu, -1);
    if (fd < 0) return fmt::format("on CPU {}: {}", cpu, errno_text(errno));
    out.owned().push_back({fd, "", a.kind});
  }
  return "";
}

// bcc_usdt_foreach's callback takes no user pointer: it reports into this.
thread_local std::vector<bcc_usdt>* usdt_found = nullptr;
void note_usdt(bcc_usdt* probe) { usdt_found->push_back(*probe); }

bool kernel_sets_usdt_semaphores() {
  return exists("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset");
}

// Where a USDT probe is: the file offsets of its locations, and of its semaphore (0: none).
struct UsdtSites {
  std::vector<std::pair<std::string, uint64_t>> locations;  // module, offset in the file
  uint64_t semaphore_offset = 0;
};

// Reads the probe's notes (those the process mapped, with a pid). The notes are closed before
// anything is attached: closing a pid's notes also closes an fd number they had closed before,
// which would be the next perf event's by then.
std::string find_usdt_sites(const PlanAttach& a, UsdtSites& sites) {
  std::unique_ptr<void, void (*)(void*)> notes(
      a.pid >= 0 ? bcc_usdt_new_frompid(a.pid, a.binary.c_str())
                 : bcc_usdt_new_frompath(a.binary.c_str()),
      bcc_usdt_close);
  if (!notes) return fmt::format("cannot read the USDT notes of {}", a.binary);
  std::vector<bcc_usdt> probes;
  usdt_found = &probes;
  bcc_usdt_foreach(notes.get(), note_usdt);
  usdt_found = nullptr;
  auto probe = std::find_if(probes.begin(), probes.end(), [&](const bcc_usdt& p) {
    return a.provider == p.provider && a.usdt_name == p.name;
  });
  if (probe == probes.end())
    return fmt::format("no USDT probe {}:{} in {}", a.provider, a.usdt_name, a.binary);
  sites.semaphore_offset = probe->semaphore_offset;
  for (int i = 0; i < probe->num_locations; ++i) {
    bcc_usdt_location location{};
    if (bcc_usdt_get_location(notes.get(), a.provider.c_str(), a.usdt_name.c_str(), i,
                              &location) != 0)
      return fmt::format("cannot read location {} of the probe", i);
    // The note holds a virtual address; uprobes want the offset in the file.
    bcc_symbol sym{};
    if (bcc_resolve_symname(location.bin_path, "", location.address, a.pid, nullptr, &sym) != 0)
      return fmt::format("cannot find address 0x{:x} in {}", location.address, location.bin_path);
    sites.locations.emplace_back(sym.module ? sym.module : location.bin_path, sym.offset);
    ::free(const_cast<char*>(sym.module));
  }
  return "";
}

// USDT probes attach like uprobes, one perf event per location of the probe, with the kernel
// counting the probe's semaphore (ref_ctr_offset). Not through libbcc's attach_usdt: it names
// its events after the address, so a second query on the same probe fails "already attached".
std::string attach_usdt(int prog, const PlanAttach& a, size_t index, Attachments& out) {
  UsdtSites sites;
  if (std::string e = find_usdt_sites(a, sites); !e.empty()) return e;
  if (sites.semaphore_offset != 0 && !kernel_sets_usdt_semaphores())
    return "the probe has a semaphore and this kernel's uprobes cannot count one (no "
           "ref_ctr_offset)";
  for (size_t i = 0; i < sites.locations.size(); ++i) {
    const auto& [module, offset] = sites.locations[i];
    std::string ev = fmt::format("{}_{}", event_name(a, index), i);
    errno = 0;
    int fd = bpf_attach_uprobe(prog, BPF_PROBE_ENTRY, ev.c_str(), module.c_str(), offset, a.pid,
                               static_cast<uint32_t>(sites.semaphore_offset));
    if (fd < 0) return uprobe_failure(errno, ev, sites.semaphore_offset != 0);
    out.owned().push_back({fd, ev, ProbeKind::Uprobe});
  }
  return "";
}

std::string attach_one(BpfObject& bpf, const PlanAttach& a, size_t index, Attachments& out) {
  int prog = bpf.program_fd(a.function);  // loaded (and verified) by the loader
  if (prog < 0) return "its function " + a.function + " was not loaded";
  switch (a.kind) {
    case ProbeKind::Tracepoint:
      return attach_tracepoint(bpf, prog, a, out);
    case ProbeKind::Kprobe:
    case ProbeKind::Kretprobe:
      return attach_kprobe(prog, a, index, out);
    case ProbeKind::Uprobe:
    case ProbeKind::Uretprobe:
      return attach_uprobe(prog, a, index, out);
    case ProbeKind::Profile:
    case ProbeKind::Software:
    case ProbeKind::Hardware:
      return attach_perf_event(prog, a, out);
    case ProbeKind::Usdt:
      return attach_usdt(prog, a, index, out);
  }
  return "unknown probe kind";
}

}  // namespace

AttachResult attach_all(BpfObject& bpf, const Plan& plan, Attachments& out) {
  AttachResult r;
  StderrCapture capture;
  size_t index = 0;
  // A fused program (compiler/codegen/fusion.h) is named by the attach of every query it
  // runs: it is attached to its tracepoint once, for the first of them.
  std::map<std::pair<std::string, std::string>, const PlanQuery*> first_query;  // function, tp
  for (const auto& q : plan.queries) {
    for (const auto& a : q.attaches) {
      if (stop_signal_pending()) {  // Ctrl-C while hundreds of probes attach
        r.log = without_libbcc_noise(capture.finish());
        r.error = "interrupted before tracing began";
        return r;
      }
      errno = 0;
      if (a.kind == ProbeKind::Tracepoint) {
        auto [it, first] = first_query.emplace(std::make_pair(a.function, a.tracepoint), &q);
        if (!first && it->second != &q) {
          ++r.probes;
          continue;
        }
      }
      std::string reason = attach_one(bpf, a, index++, out);
      int err = errno;
      if (!reason.empty()) {
        r.log = without_libbcc_noise(capture.finish());
        std::string problem =
            resource_problem(err, fmt::format("cannot attach {} for query {}", a.spec, q.name));
        r.error = problem.empty() ? failure(q, a, reason, r.log) : problem;
        return r;
      }
      ++r.probes;
    }
  }
  // Each raw tracepoint is one PlanAttach with one link.
  r.raw_tracepoints = static_cast<int>(std::count_if(
      out.owned().begin(), out.owned().end(), [](const OwnedProbe& p) { return p.raw_tracepoint; }));
  r.log = without_libbcc_noise(capture.finish());
  return r;
}

bool Attachments::fd_only() const {
  for (const auto& p : owned_) {
    if (p.legacy_event.empty()) continue;
    bool kprobe = p.kind == ProbeKind::Kprobe || p.kind == ProbeKind::Kretprobe;
    // With the kprobe/uprobe PMU, libbcc creates no tracefs event: closing the fd is enough.
    if (!exists(kprobe ? "/sys/bus/event_source/devices/kprobe/type"
                       : "/sys/bus/event_source/devices/uprobe/type"))
      return false;
  }
  return true;
}

void Attachments::close_all() {
  std::vector<std::thread> closers;
  closers.reserve(owned_.size());
  for (const auto& p : owned_) {
    if (p.fd < 0) continue;
    if (p.link)
      closers.emplace_back([fd = p.fd] { close(fd); });
    else
      closers.emplace_back([fd = p.fd] { bpf_close_perf_event_fd(fd); });
  }
  for (auto& t : closers) t.join();
  for (auto& p : owned_) {
    if (p.fd >= 0 && !p.legacy_event.empty()) {
      bool kprobe = p.kind == ProbeKind::Kprobe || p.kind == ProbeKind::Kretprobe;
      if (kprobe)
        bpf_detach_kprobe(p.legacy_event.c_str());
      else
        bpf_detach_uprobe(p.legacy_event.c_str());
    }
    p.fd = -1;
  }
  owned_.clear();
}

Attachments::~Attachments() { close_all(); }

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(',', i);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(i, end - i);
    size_t dash = part.find('-');
    try {
      int lo = std::stoi(part.substr(0, dash));
      int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      // whitespace or a trailing newline: nothing to add
    }
    i = end + 1;
  }
  return cpus;
}

std::vector<int> online_cpus() {
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  std::getline(in, text);
  auto cpus = parse_cpu_list(text);
  if (cpus.empty())
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<int>(c));
  return cpus;
}

}  // namespace bpfql
