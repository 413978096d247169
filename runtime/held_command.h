// `bpfql run -c 'CMD ARGS'`: the command bpfql starts and traces. It is started before the
// program is generated (its pid is the filter's root), held at its first instruction until every
// probe is attached, so that nothing it does goes unseen, then released. The run ends when it
// exits; its status is reported, not passed on.
#pragma once

#include <sys/types.h>

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace bpfql {

// CMD split into words as a shell would: blanks separate, '...' and "..." quote, a backslash
// escapes the next character (inside "..." only \", \\, \$ and \`). No expansion of any kind.
std::expected<std::vector<std::string>, std::string> split_command(const std::string& command);

class HeldCommand final : public TracedCommand {
 public:
  // Forks and execs the command under PTRACE_TRACEME: the kernel stops it right after a
  // successful exec, before its first instruction. The error says why it could not start.
  static std::expected<std::unique_ptr<HeldCommand>, std::string> start(const std::string& command);
  ~HeldCommand() override;  // a command never released is killed (bpfql failed before attaching)

  pid_t pid() const { return pid_; }
  void release() override;
  int exit_fd() const override { return pidfd_; }
  std::string exited() override;

 private:
  HeldCommand(pid_t pid, int pidfd, std::string name) : pid_(pid), pidfd_(pidfd), name_(std::move(name)) {}
  pid_t pid_;
  int pidfd_;
  std::string name_;
  bool released_ = false;
  bool reaped_ = false;
};

}  // namespace bpfql
