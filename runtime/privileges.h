// Dropping privileges once everything is attached. Loading and attaching need root's
// capabilities (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN on older kernels, CAP_DAC_OVERRIDE for
// tracefs); what follows only reads maps and perf buffers through fds bpfql already holds, and
// closes them at exit, which needs no capability. So after attach the process sets no_new_privs
// and keeps only what printing the Plan's values needs: nothing, or CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH when user addresses are symbolized (libbcc reads /proc/PID/maps and the
// process's binaries, possibly another user's). Kernel symbols are read before the drop.
// docs/security.md ("Privileges after attach") says what remains.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan.h"

namespace bpfql {

// The capabilities (CAP_* numbers) the Plan still needs after attach.
std::vector<int> capabilities_after_attach(const Plan& plan);

struct PrivilegeDrop {
  std::vector<int> kept;  // capabilities left in the permitted/effective/bounding sets
  std::string error;      // "" on success; otherwise what could not be dropped (a warning)
};

// Sets no_new_privs, locks root's special treatment (SECBIT_NOROOT: an exec as uid 0 gains
// nothing), and removes every capability not in capabilities_after_attach(plan) from the
// bounding, ambient, inheritable, permitted and effective sets. Preloads what the dropped
// capabilities guard (kernel symbols) when the Plan needs it. Irreversible for the process.
PrivilegeDrop drop_privileges_after_attach(const Plan& plan);

// "cap_sys_ptrace" for CAP_SYS_PTRACE (as capsh and /proc/PID/status decoders print them).
std::string capability_name(int cap);

}  // namespace bpfql
