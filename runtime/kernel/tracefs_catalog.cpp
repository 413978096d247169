#include "runtime/kernel/tracefs_catalog.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/kernel/elf_catalog.h"
#include "runtime/kernel/kernel_btf.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

const fs::path kPmuDevices = "/sys/bus/event_source/devices";

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// Opens (disabled) and closes a CPU-cycles counter on this thread; errno on failure, else 0.
// User-space only, so that perf_event_paranoid does not hide a PMU that is there.
int try_open_cycles_counter() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  ::close(static_cast<int>(fd));
  return 0;
}

std::string explain_hardware_failure(int err) {
  std::string call = fmt::format("perf_event_open: {}", std::strerror(err));
  if (err == EACCES || err == EPERM)
    return fmt::format(
        "hardware perf events are not permitted ({}): run as root or lower "
        "/proc/sys/kernel/perf_event_paranoid",
        call);
  if (err == ENOENT || err == ENODEV || err == EOPNOTSUPP) {
    std::string sysfs = path_exists(kPmuDevices / "cpu")
                            ? ""
                            : fmt::format("; no {}", (kPmuDevices / "cpu").string());
    return fmt::format("no hardware PMU on this machine ({}{})", call, sysfs);
  }
  return fmt::format("hardware perf events are not available ({})", call);
}

}  // namespace

TracefsCatalog::TracefsCatalog() {
  use_first_usable({"/sys/kernel/tracing", "/sys/kernel/debug/tracing"});
}

TracefsCatalog::TracefsCatalog(fs::path tracefs_root) { use_first_usable({tracefs_root}); }

void TracefsCatalog::use_first_usable(const std::vector<fs::path>& candidates) {
  std::optional<fs::path> denied;
  for (const fs::path& root : candidates) {
    fs::path events = root / "events";
    struct stat st {};
    if (::stat(events.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (::access(events.c_str(), R_OK | X_OK) == 0) {
        root_ = root;
        events_.emplace(events);
        return;
      }
      if (!denied) denied = events;
    } else if (errno == EACCES && !denied) {
      denied = events;  // a parent (tracefs itself is mode 0700) hides it from non-root users
    }
  }
  if (denied) {
    problem_ = fmt::format("permission denied reading {}: run as root", denied->string());
  } else {
    problem_ = fmt::format(
        "tracefs is not mounted (no {}): run `mount -t tracefs none /sys/kernel/tracing` (or "
        "scripts/setup-host.sh)",
        (candidates.front() / "events").string());
  }
}

Result<TracepointFormat> TracefsCatalog::load_tracepoint(std::string_view category,
                                                         std::string_view name) const {
  if (!events_) return error_at({}, problem_);
  return events_->load(category, name);
}

std::optional<TracepointFormat> TracefsCatalog::tracepoint(std::string_view category,
                                                           std::string_view name) const {
  Result<TracepointFormat> format = load_tracepoint(category, name);
  if (!format) return std::nullopt;
  return std::move(*format);
}

std::vector<std::string> TracefsCatalog::tracepoint_names() const {
  return events_ ? events_->names() : std::vector<std::string>{};
}

std::string TracefsCatalog::kprobes_unavailable() const {
  // libbcc attaches through the kprobe PMU when there is one, else through kprobe_events.
  if (path_exists(kPmuDevices / "kprobe")) return "";
  if (!root_.empty() && path_exists(root_ / "kprobe_events")) return "";
  if (root_.empty())
    return fmt::format("kprobes are not available: no kprobe PMU in {}, and {}",
                       kPmuDevices.string(), problem_);
  return "kprobes are not available on this kernel (no kprobe_events in tracefs; "
         "CONFIG_KPROBES is off)";
}

std::string TracefsCatalog::hardware_events_unavailable() const {
  std::lock_guard lock(mutex_);
  if (!hardware_problem_) {
    int err = try_open_cycles_counter();
    hardware_problem_ = err == 0 ? "" : explain_hardware_failure(err);
  }
  return *hardware_problem_;
}

Result<std::string> TracefsCatalog::find_binary(std::string_view target) const {
  std::lock_guard lock(mutex_);
  auto it = binaries_.find(target);
  if (it == binaries_.end())
    it = binaries_.emplace(std::string(target), find_elf_binary(target)).first;
  return it->second;
}

std::optional<std::string> TracefsCatalog::resolve_binary(std::string_view target) const {
  Result<std::string> path = find_binary(target);
  if (!path) return std::nullopt;
  return *path;
}

bool TracefsCatalog::has_symbol(const std::string& binary_path, std::string_view symbol) const {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(binary_path, std::string(symbol));
  auto it = symbols_.find(key);
  if (it == symbols_.end()) it = symbols_.emplace(key, elf_has_function(binary_path, symbol)).first;
  return it->second;
}

std::vector<UsdtProbeInfo> TracefsCatalog::usdt_probes(const std::string& binary_path) const {
  std::lock_guard lock(mutex_);
  auto it = usdt_.find(binary_path);
  if (it == usdt_.end()) it = usdt_.emplace(binary_path, elf_usdt_probes(binary_path)).first;
  return it->second;
}

// Not cached: only an error (a symbol that is not there) asks for the list.
std::vector<std::string> TracefsCatalog::function_symbols(const std::string& binary_path) const {
  return elf_function_symbols(binary_path);
}

std::optional<int> TracefsCatalog::kernel_member_offset(std::string_view struct_name,
                                                        std::string_view member) const {
  return bpfql::kernel_member_offset(struct_name, member);  // kernel_btf caches the BTF itself
}

}  // namespace bpfql
