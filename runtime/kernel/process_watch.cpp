// pidfd-based exit notices for traced processes (see process_watch.h).
#include "runtime/kernel/process_watch.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace bpfql {

std::string missing_process(int pid) {
  if (pid <= 0) return fmt::format("--pid {} is not a process id", pid);
  if (kill(pid, 0) == 0 || errno == EPERM) return "";
  return fmt::format("no process with pid {} (from --pid or the query's pid:); is it running?", pid);
}

ProcessWatch::~ProcessWatch() {
  for (const auto& [fd, w] : by_fd_) close(fd);
}

std::string ProcessWatch::open(const Plan& plan) {
  std::map<pid_t, std::vector<std::string>> pids;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.pid >= 0) {
        auto& names = pids[a.pid];
        if (std::find(names.begin(), names.end(), q.name) == names.end()) names.push_back(q.name);
      }
  for (auto& [pid, queries] : pids) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) {
      if (errno == ESRCH) return missing_process(pid);
      continue;  // no pidfds (kernels before 5.3): the run works, only without the notice
    }
    by_fd_[fd] = Watched{pid, std::move(queries)};
  }
  return "";
}

std::vector<int> ProcessWatch::fds() const {
  std::vector<int> out;
  for (const auto& [fd, w] : by_fd_) out.push_back(fd);
  return out;
}

std::string ProcessWatch::take_exit(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return "";
  std::string names;
  for (const auto& q : it->second.queries) names += (names.empty() ? "" : ", ") + q;
  std::string msg = fmt::format(
      "process {} exited: the probes of {} {} will not fire again (a restarted process has "
      "a new pid); still running, Ctrl-C prints the result",
      it->second.pid, it->second.queries.size() == 1 ? "query" : "queries", names);
  close(fd);
  by_fd_.erase(it);
  return msg;
}

}  // namespace bpfql
