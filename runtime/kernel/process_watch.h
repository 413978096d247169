// The processes a run's uprobes and USDT probes are limited to (--pid, or `pid:` in a query),
// watched through pidfds: when one exits, its probes can never fire again, and the user should
// hear it instead of watching an empty table. The run goes on (other probes may still fire, and
// Ctrl-C prints what was collected); the session polls fds() next to its other fds.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/plan.h"

namespace bpfql {

class ProcessWatch {
 public:
  ProcessWatch() = default;
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  // Starts watching every process a PlanAttach names. Returns "" or why one cannot be watched
  // (it does not exist: "no process with pid N ...").
  std::string open(const Plan& plan);

  std::vector<int> fds() const;
  bool watches(int fd) const { return by_fd_.count(fd) != 0; }
  // Call when watched `fd` is readable: the process exited. Returns the message to print and
  // closes fd (a pidfd stays readable: take it out of the poll set first).
  std::string take_exit(int fd);

 private:
  struct Watched {
    pid_t pid;
    std::vector<std::string> queries;
  };
  std::map<int, Watched> by_fd_;
};

// "" when process `pid` exists; otherwise the message for a --pid or `pid:` that names none.
std::string missing_process(int pid);

}  // namespace bpfql
