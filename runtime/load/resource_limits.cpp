// Resource limits told apart from refused programs (see resource_limits.h).
#include "runtime/load/resource_limits.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>

namespace bpfql {

std::string resource_problem(int err, std::string_view doing) {
  switch (err) {
    case EMFILE: {
      rlimit limit{};
      getrlimit(RLIMIT_NOFILE, &limit);
      return fmt::format(
          "{}: too many open files (EMFILE): this process may open {} (`ulimit -n`; bpfql "
          "raises it to the hard limit); every probe, program and map takes one: raise the hard "
          "limit (`ulimit -Hn`, LimitNOFILE= for a service) or attach fewer probes",
          doing, static_cast<unsigned long long>(limit.rlim_cur));
    }
    case ENFILE:
      return fmt::format("{}: the system's table of open files is full (ENFILE; fs.file-max)",
                         doing);
    case ENOMEM:
      return fmt::format(
          "{}: out of memory (ENOMEM): the kernel could not allocate it (a memory cgroup limit, "
          "or max_entries too large for this machine's memory)",
          doing);
    case EPERM:
      return fmt::format(
          "{}: operation not permitted (EPERM): loading and attaching BPF programs needs "
          "CAP_BPF, CAP_PERFMON (and CAP_SYS_ADMIN on older kernels); a container, a seccomp "
          "filter or the kernel's lockdown can also forbid it",
          doing);
    default:
      return "";
  }
}

unsigned long raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<unsigned long>(limit.rlim_cur);
}

}  // namespace bpfql
