// Name tables and lookups behind the name functions (see names.h).
#include "runtime/collect/names.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "runtime/collect/display.h"

namespace bpfql {
namespace {

constexpr const char* kSignals[] = {
    "0",        "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT", "SIGBUS",
    "SIGFPE",   "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",   "SIGPIPE", "SIGALRM", "SIGTERM",
    "SIGSTKFLT", "SIGCHLD", "SIGCONT",  "SIGSTOP", "SIGTSTP",   "SIGTTIN", "SIGTTOU", "SIGURG",
    "SIGXCPU",  "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH",  "SIGIO",   "SIGPWR",  "SIGSYS",
};
constexpr int kSigRtMin = 34;
constexpr int kSigRtMax = 64;

constexpr const char* kTcpStates[] = {
    "0",          "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",    "TIME_WAIT",
    "CLOSE",      "CLOSE_WAIT",  "LAST_ACK", "LISTEN",   "CLOSING",   "NEW_SYN_RECV", "BOUND_INACTIVE",
};

constexpr const char* kSoftirqs[] = {"HI",      "TIMER", "NET_TX",  "NET_RX", "BLOCK",
                                     "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};

struct Flag {
  uint64_t bit;
  const char* name;
};
// x86_64 (asm-generic) values.
constexpr Flag kOpenFlags[] = {
    {0100, "O_CREAT"},          {0200, "O_EXCL"},         {0400, "O_NOCTTY"},
    {01000, "O_TRUNC"},         {02000, "O_APPEND"},      {04000, "O_NONBLOCK"},
    {04010000, "O_SYNC"},       {010000, "O_DSYNC"},      {020000, "O_ASYNC"},
    {040000, "O_DIRECT"},       {0100000, "O_LARGEFILE"}, {020200000, "O_TMPFILE"},
    {0200000, "O_DIRECTORY"},   {0400000, "O_NOFOLLOW"},  {01000000, "O_NOATIME"},
    {02000000, "O_CLOEXEC"},    {010000000, "O_PATH"},
};

// sched_switch's prev_state letters (TASK_REPORT bits), as its print fmt shows them.
constexpr Flag kTaskStates[] = {{0x1, "S"},  {0x2, "D"},  {0x4, "T"},  {0x8, "t"},
                                {0x10, "X"}, {0x20, "Z"}, {0x40, "P"}, {0x80, "I"}};

// Paths of one filesystem tree by inode, rebuilt when a lookup misses (at most once a second).
class InodePaths {
 public:
  explicit InodePaths(std::function<void(std::unordered_map<uint64_t, std::string>&)> scan)
      : scan_(std::move(scan)) {}

  std::optional<std::string> find(uint64_t key) {
    std::lock_guard lock(mu_);
    if (auto it = paths_.find(key); it != paths_.end()) return it->second;
    auto now = std::chrono::steady_clock::now();
    if (scanned_ && now - last_scan_ < std::chrono::seconds(1)) return std::nullopt;
    scanned_ = true;
    last_scan_ = now;
    paths_.clear();
    scan_(paths_);
    if (auto it = paths_.find(key); it != paths_.end()) return it->second;
    return std::nullopt;
  }

 private:
  std::function<void(std::unordered_map<uint64_t, std::string>&)> scan_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::string> paths_;
  bool scanned_ = false;
  std::chrono::steady_clock::time_point last_scan_;
};

// The cgroup v2 hierarchy: /sys/fs/cgroup itself, or /sys/fs/cgroup/unified on a hybrid system.
std::filesystem::path cgroup2_root() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers", ec)) return "/sys/fs/cgroup";
  if (fs::exists("/sys/fs/cgroup/unified/cgroup.controllers", ec)) return "/sys/fs/cgroup/unified";
  return "/sys/fs/cgroup";
}

void scan_cgroups(std::unordered_map<uint64_t, std::string>& out) {
  namespace fs = std::filesystem;
  fs::path root = cgroup2_root();
  struct stat st {};
  if (stat(root.c_str(), &st) == 0) out[st.st_ino] = "/";
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) {
      continue;
    }
    if (stat(it->path().c_str(), &st) != 0) continue;
    out[st.st_ino] = "/" + fs::relative(it->path(), root, ec).string();
  }
}

void scan_disks(std::unordered_map<uint64_t, std::string>& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it("/sys/class/block", ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path() / "dev");
    unsigned major = 0, minor = 0;
    char colon = 0;
    if (!(in >> major >> colon >> minor) || colon != ':') continue;
    out[(uint64_t{major} << 20) | minor] = it->path().filename().string();
  }
}

}  // namespace

std::string signal_text(int64_t sig) {
  if (sig >= 0 && sig < static_cast<int64_t>(std::size(kSignals))) return kSignals[sig];
  if (sig == kSigRtMin) return "SIGRTMIN";
  if (sig > kSigRtMin && sig <= kSigRtMax) return fmt::format("SIGRTMIN+{}", sig - kSigRtMin);
  return std::to_string(sig);
}

std::string tcp_state_text(uint64_t state) {
  if (state < std::size(kTcpStates)) return kTcpStates[state];
  return std::to_string(state);
}

std::string open_flags_text(uint64_t flags) {
  static constexpr const char* kAccess[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
  std::string out = kAccess[flags & 3];
  uint64_t rest = flags & ~uint64_t{3};
  for (const auto& f : kOpenFlags) {
    if ((rest & f.bit) != f.bit) continue;
    out += '|';
    out += f.name;
    rest &= ~f.bit;
  }
  if (rest != 0) out += fmt::format("|0{:o}", rest);
  return out;
}

std::string task_state_text(uint64_t state) {
  constexpr uint64_t kPreempted = 0x100;  // TASK_REPORT_MAX: "+" after the state
  std::string out;
  for (const auto& f : kTaskStates) {
    if ((state & f.bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += f.name;
  }
  if (out.empty()) out = "R";
  if (state & kPreempted) out += '+';
  return out;
}

std::string ipv4_int_text(uint64_t addr) {
  return fmt::format("{}.{}.{}.{}", addr & 0xff, (addr >> 8) & 0xff, (addr >> 16) & 0xff,
                     (addr >> 24) & 0xff);
}

// include/uapi/linux/capability.h, as capabilities(7) and BCC's capable print them.
constexpr const char* kCapabilities[] = {
    "CAP_CHOWN",           "CAP_DAC_OVERRIDE",  "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
    "CAP_FSETID",          "CAP_KILL",          "CAP_SETGID",          "CAP_SETUID",
    "CAP_SETPCAP",         "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",       "CAP_NET_RAW",       "CAP_IPC_LOCK",        "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",      "CAP_SYS_RAWIO",     "CAP_SYS_CHROOT",      "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",       "CAP_SYS_ADMIN",     "CAP_SYS_BOOT",        "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",    "CAP_SYS_TIME",      "CAP_SYS_TTY_CONFIG",  "CAP_MKNOD",
    "CAP_LEASE",           "CAP_AUDIT_WRITE",   "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",     "CAP_SYSLOG",          "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",   "CAP_AUDIT_READ",    "CAP_PERFMON",         "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

std::string capability_text(uint64_t cap) {
  if (cap < std::size(kCapabilities)) return kCapabilities[cap];
  return std::to_string(cap);  // a capability newer than this table
}

std::string softirq_text(uint64_t vec) {
  if (vec < std::size(kSoftirqs)) return kSoftirqs[vec];
  return std::to_string(vec);
}

std::string irq_text_in(const std::string& irq_root, uint64_t irq) {
  std::ifstream in(fmt::format("{}/{}/actions", irq_root, irq));
  std::string names;
  if (in) std::getline(in, names);
  while (!names.empty() && (names.back() == '\n' || names.back() == ' ')) names.pop_back();
  return names.empty() ? std::to_string(irq) : names;
}

std::string irq_text(uint64_t irq) {
  // Handlers rarely change once a driver has its IRQ: a name found is kept; a number without
  // one is read again next time (a device may request its IRQ later).
  static std::mutex lock;
  static std::unordered_map<uint64_t, std::string> known;
  std::lock_guard hold(lock);
  if (auto it = known.find(irq); it != known.end()) return it->second;
  std::string text = irq_text_in("/sys/kernel/irq", irq);
  if (text != std::to_string(irq)) known.emplace(irq, text);
  return text;
}

std::string errno_text(int64_t value) {
  if (value < 0 && value >= -4095)
    if (auto name = errno_name(static_cast<int>(-value))) return std::string(*name);
  return std::to_string(value);
}

std::string cgroup_path_text(uint64_t id) {
  static InodePaths paths(scan_cgroups);
  if (auto p = paths.find(id)) return *p;
  return fmt::format("cgroup:{}", id);
}

std::string disk_text(uint64_t dev) {
  static InodePaths names(scan_disks);
  if (auto n = names.find(dev)) return *n;
  return fmt::format("{}:{}", dev >> 20, dev & ((1u << 20) - 1));
}

std::string symbolic_text(uint64_t value, const std::vector<std::pair<uint64_t, std::string>>& table,
                          bool flags) {
  if (!flags) {
    for (const auto& [v, name] : table)
      if (v == value) return name;
    return std::to_string(value);
  }
  std::string out;
  uint64_t rest = value;
  for (const auto& [v, name] : table) {
    if (v == 0) {
      if (value == 0) return name;
      continue;
    }
    if ((rest & v) != v) continue;
    if (!out.empty()) out += '|';
    out += name;
    rest &= ~v;
  }
  if (rest != 0) out += fmt::format("{}0x{:x}", out.empty() ? "" : "|", rest);
  return out.empty() ? "0" : out;
}

}  // namespace bpfql
