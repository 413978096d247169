// no_new_privs and capability drop after attach (see privileges.h). Raw capget/capset and
// prctl: the five capability sets are three bit masks and two prctl-managed sets, not worth a
// library dependency.
#include "runtime/privileges.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "runtime/collect/display.h"

namespace bpfql {
namespace {

bool plan_uses(const Plan& plan, bool user) {
  auto wants = [user](const PlanField& f) {
    return user ? (f.kind == ValueKind::UserStack || f.display == Display::Usym)
                : (f.kind == ValueKind::KernelStack || f.display == Display::Ksym);
  };
  for (const auto& q : plan.queries) {
    if (std::any_of(q.keys.begin(), q.keys.end(), wants)) return true;
    if (std::any_of(q.event_fields.begin(), q.event_fields.end(), wants)) return true;
  }
  return false;
}

// The highest capability this kernel knows (newer kernels than our headers add some).
int last_capability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = CAP_LAST_CAP;
  if (!(in >> last) || last < 0 || last > 63) last = CAP_LAST_CAP;
  return last;
}

struct CapSets {
  uint64_t effective = 0, permitted = 0, inheritable = 0;
};

bool capget_all(CapSets& out) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  if (syscall(SYS_capget, &header, data.data()) != 0) return false;
  auto join = [](uint32_t lo, uint32_t hi) { return uint64_t{lo} | (uint64_t{hi} << 32); };
  out.effective = join(data[0].effective, data[1].effective);
  out.permitted = join(data[0].permitted, data[1].permitted);
  out.inheritable = join(data[0].inheritable, data[1].inheritable);
  return true;
}

bool capset_all(const CapSets& sets) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  for (int i = 0; i < 2; ++i) {
    data[i].effective = static_cast<uint32_t>(sets.effective >> (32 * i));
    data[i].permitted = static_cast<uint32_t>(sets.permitted >> (32 * i));
    data[i].inheritable = static_cast<uint32_t>(sets.inheritable >> (32 * i));
  }
  return syscall(SYS_capset, &header, data.data()) == 0;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::vector<int> capabilities_after_attach(const Plan& plan) {
  // Map and perf buffer reads go through fds opened before the drop: no capability. User
  // symbols: /proc/PID/maps of another user's process needs CAP_SYS_PTRACE (ptrace read access),
  // its binaries (or /proc/PID/root/...) may need CAP_DAC_READ_SEARCH.
  if (plan_uses(plan, /*user=*/true)) return {CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE};
  return {};
}

PrivilegeDrop drop_privileges_after_attach(const Plan& plan) {
  PrivilegeDrop r;
  r.kept = capabilities_after_attach(plan);
  // /proc/kallsyms shows addresses only to openers with CAP_SYSLOG: read it while we have it.
  if (plan_uses(plan, /*user=*/false)) ksym_name(0);

  std::vector<std::string> problems;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) problems.push_back("no_new_privs: " + errno_text());
  uint64_t keep = 0;
  for (int cap : r.kept) keep |= uint64_t{1} << cap;
  // The bounding set and securebits need CAP_SETPCAP: change them before capset drops it.
  const int last = last_capability();  // read once: its opens would show in bpfql's own traces
  for (int cap = 0; cap <= last; ++cap) {
    if (keep & (uint64_t{1} << cap)) continue;
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      problems.push_back("bounding set: " + errno_text());
      break;
    }
  }
  // uid 0 must not regain capabilities through exec (no_new_privs covers setuid binaries only).
  unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  int current = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
  if (current < 0 || prctl(PR_SET_SECUREBITS, static_cast<unsigned long>(current) | bits, 0, 0, 0) != 0)
    problems.push_back("securebits: " + errno_text());
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    problems.push_back("ambient set: " + errno_text());

  CapSets sets;
  if (!capget_all(sets)) {
    problems.push_back("capget: " + errno_text());
  } else {
    sets.permitted &= keep;
    sets.effective = sets.permitted;
    sets.inheritable = 0;
    if (!capset_all(sets)) problems.push_back("capset: " + errno_text());
  }
  CapSets now;
  if (capget_all(now) && (now.effective & ~keep || now.permitted & ~keep))
    problems.push_back(fmt::format("capabilities still held: effective {:#x}", now.effective));
  for (const auto& p : problems) r.error += (r.error.empty() ? "" : "; ") + p;
  return r;
}

std::string capability_name(int cap) {
  static constexpr std::array<const char*, 41> names = {
      "cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner", "cap_fsetid",
      "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap", "cap_linux_immutable",
      "cap_net_bind_service", "cap_net_broadcast", "cap_net_admin", "cap_net_raw",
      "cap_ipc_lock", "cap_ipc_owner", "cap_sys_module", "cap_sys_rawio", "cap_sys_chroot",
      "cap_sys_ptrace", "cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
      "cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod", "cap_lease",
      "cap_audit_write", "cap_audit_control", "cap_setfcap", "cap_mac_override",
      "cap_mac_admin", "cap_syslog", "cap_wake_alarm", "cap_block_suspend", "cap_audit_read",
      "cap_perfmon", "cap_bpf", "cap_checkpoint_restore"};
  if (cap >= 0 && static_cast<size_t>(cap) < names.size()) return names[cap];
  return fmt::format("cap_{}", cap);
}

}  // namespace bpfql
