#include "runtime/kernel/snapshot_export.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "runtime/kernel/btf_subset.h"
#include "runtime/kernel/kernel_btf.h"
#include "runtime/kernel/tracepoint_directory.h"

namespace bpfql {
namespace {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

Result<KernelSnapshot> export_running_kernel(const TracefsCatalog& live,
                                             const SnapshotSelection* only) {
  if (!live.tracefs_problem().empty()) return error_at({}, live.tracefs_problem());
  KernelSnapshot s;
  utsname uts{};
  if (::uname(&uts) == 0) {
    s.release = uts.release;
    s.version = uts.version;
    s.machine = uts.machine;
    s.hostname = uts.nodename;
  }
  s.exported_at = utc_now();
  s.kprobes_unavailable = live.kprobes_unavailable();
  s.hardware_events_unavailable = live.hardware_events_unavailable();

  std::filesystem::path events = std::filesystem::path(live.tracefs_root()) / "events";
  std::vector<std::string> names = live.tracepoint_names();
  if (only) names.assign(only->tracepoints.begin(), only->tracepoints.end());
  for (const std::string& name : names) {
    auto colon = name.find(':');
    auto text = read_text_file(events / name.substr(0, colon) / name.substr(colon + 1) / "format");
    if (!text) return std::unexpected(text.error());
    s.tracepoint_formats[name] = std::move(*text);
  }

  if (only) {
    s.exported_for = only->queries;
    if (running_kernel_btf() && !only->structs.empty()) {
      auto subset = btf_subset(running_kernel_btf(), only->structs);
      if (!subset) return error_at({}, "cannot take the BTF types the queries use: " + subset.error());
      s.btf = std::move(*subset);
    }
  } else if (running_kernel_btf()) {
    auto raw = read_text_file("/sys/kernel/btf/vmlinux");
    if (!raw) return std::unexpected(raw.error());
    s.btf = std::move(*raw);
  }
  return s;
}

}  // namespace bpfql
