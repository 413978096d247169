#include "runtime/held_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace bpfql {

std::expected<std::vector<std::string>, std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i >= command.size()) return std::unexpected("-c ends with a lone backslash");
      word += command[i];
    } else if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) return std::unexpected("-c has an unterminated ' quote");
      word += command.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= command.size()) return std::unexpected("-c has an unterminated \" quote");
        if (command[i] == '"') break;
        if (command[i] == '\\' && i + 1 < command.size() &&
            std::string_view("\"\\$`").find(command[i + 1]) != std::string_view::npos)
          ++i;
        word += command[i];
      }
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return std::unexpected("-c needs a command to run");
  return words;
}

namespace {

// What the child reports through its close-on-exec pipe when it cannot become the command.
struct StartFailure {
  int stage;  // 0: PTRACE_TRACEME, 1: exec
  int error;
};

[[noreturn]] void become(const std::vector<std::string>& words, int report_fd) {
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);  // the command gets the signals a shell would give it
  StartFailure failure{0, 0};
  if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) {
    failure = {0, errno};
  } else {
    std::vector<char*> argv;
    for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    failure = {1, errno};
  }
  ssize_t ignored = write(report_fd, &failure, sizeof failure);
  (void)ignored;
  _exit(127);
}

}  // namespace

std::expected<std::unique_ptr<HeldCommand>, std::string> HeldCommand::start(
    const std::string& command) {
  auto words = split_command(command);
  if (!words) return std::unexpected(words.error());
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return std::unexpected(fmt::format("cannot start '{}': pipe: {}", command, std::strerror(errno)));
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(report[0]);
    close(report[1]);
    return std::unexpected(fmt::format("cannot start '{}': fork: {}", command, std::strerror(error)));
  }
  if (pid == 0) {
    close(report[0]);
    become(*words, report[1]);
  }
  close(report[1]);
  int status = 0;
  pid_t waited;
  do waited = waitpid(pid, &status, 0);
  while (waited < 0 && errno == EINTR);
  StartFailure failure{-1, 0};
  bool reported = read(report[0], &failure, sizeof failure) == sizeof failure;
  close(report[0]);
  if (waited == pid && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP) {
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
      int error = errno;
      kill(pid, SIGKILL);
      ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
      waitpid(pid, nullptr, 0);
      return std::unexpected(fmt::format("cannot watch '{}': pidfd_open: {}", command,
                                         std::strerror(error)));
    }
    return std::unique_ptr<HeldCommand>(new HeldCommand(pid, pidfd, (*words)[0]));
  }
  if (waited == pid && !WIFEXITED(status) && !WIFSIGNALED(status)) {  // stopped by another signal
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  if (reported && failure.stage == 1)
    return std::unexpected(fmt::format("cannot run '{}': {}", (*words)[0], std::strerror(failure.error)));
  if (reported && failure.stage == 0)
    return std::unexpected(fmt::format("cannot hold '{}' until the probes are attached: ptrace: {} "
                                       "(is ptrace forbidden here, kernel.yama.ptrace_scope=3?)",
                                       (*words)[0], std::strerror(failure.error)));
  return std::unexpected(fmt::format("cannot start '{}'", command));
}

HeldCommand::~HeldCommand() {
  if (!released_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  close(pidfd_);
}

void HeldCommand::release() {
  if (released_) return;
  ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
  released_ = true;
}

std::string HeldCommand::exited() {
  if (reaped_) return "";
  int status = 0;
  pid_t waited;
  do waited = waitpid(pid_, &status, 0);
  while (waited < 0 && errno == EINTR);
  reaped_ = true;
  if (waited != pid_) return fmt::format("command {} (pid {}) ended", name_, pid_);
  if (WIFSIGNALED(status))
    return fmt::format("command {} (pid {}) was killed by signal {} ({})", name_, pid_,
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("command {} (pid {}) exited with status {}", name_, pid_, WEXITSTATUS(status));
}

}  // namespace bpfql
