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
  auto add = [&](pid_t pid, const std::string& query) {
    auto& names = pids[pid];
    if (std::find(names.begin(), names.end(), query) == names.end()) names.push_back(query);
  };
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (a.pid >= 0) add(a.pid, q.name);
  // --pid on other probes is a filter in the program, loaded as a run-time constant.
  for (const auto& c : plan.constants)
    if (c.source == "--pid" && c.value > 0 && c.value < (uint64_t{1} << 31)) {
      for (const auto& q : plan.queries) add(static_cast<pid_t>(c.value), q.name);
      break;
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
  std::string msg =
      by_fd_.size() == 1
          ? fmt::format("process {} exited: printing the result and stopping", it->second.pid)
          : fmt::format("process {} exited: the probes of {} {} will not fire again; still "
                        "running for the other processes",
                        it->second.pid, it->second.queries.size() == 1 ? "query" : "queries", names);
  close(fd);
  by_fd_.erase(it);
  return msg;
}

}  // namespace bpfql
