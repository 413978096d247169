// Running the compile helpers (see compile_child.h).
#include "runtime/compile/compile_child.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "runtime/compile/trusted_path.h"
#include "runtime/kernel/pending_signals.h"

extern char** environ;

namespace bpfql {
namespace {

namespace fs = std::filesystem;

std::string child_death(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the compiler process was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("the compiler process exited with status {} without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

// A reply holds the program image (a cache file holds at most 64 MiB of it) and the compile's
// logs; anything larger is a helper gone wrong, not a program.
constexpr size_t kMaxReply = 128u << 20;
constexpr int kDefaultTimeoutSeconds = 300;

// How long a compile may take: BPFQL_COMPILE_TIMEOUT seconds (the operator's), else 300.
int compile_timeout_seconds() {
  const char* text = std::getenv("BPFQL_COMPILE_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 86400) return kDefaultTimeoutSeconds;
  return static_cast<int>(value);
}

// Starts `path` with its stdin and stdout on the given pipe ends. The child gets an empty signal
// mask and default SIGINT/SIGTERM/SIGPIPE handlers (bpfql blocks SIGINT/SIGTERM for its signalfd; a helper must die of
// them), and dies with bpfql (PR_SET_PDEATHSIG), also when bpfql is killed with SIGKILL. Only
// async-signal-safe calls between fork and exec.
pid_t spawn_helper(const std::string& path, int in_fd, int out_fd) {
  std::string argv0 = fs::path(path).filename();
  char* argv[] = {argv0.data(), nullptr};
  pid_t parent = getpid();
  pid_t child = fork();
  if (child != 0) return child;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction deflt {};
  deflt.sa_handler = SIG_DFL;
  // SIGHUP keeps its disposition: nohup's SIG_IGN stays (exec keeps ignored signals ignored).
  for (int sig : {SIGINT, SIGTERM, SIGPIPE}) sigaction(sig, &deflt, nullptr);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0) _exit(127);
  execve(path.c_str(), argv, environ);
  _exit(127);
}

// Runs `path` with `input` on its stdin; its stdout, or why there is none. Ends (killing the
// helper) on SIGINT/SIGTERM/SIGHUP, after the compile timeout, or when the reply grows past
// kMaxReply; the signal stays pending for the caller's SignalFd.
std::expected<std::string, std::string> run_helper(const std::string& path,
                                                   const std::string& input) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return std::unexpected(std::string(strerror(errno)));
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    int err = errno;
    close(to_child[0]);
    close(to_child[1]);
    return std::unexpected(std::string(strerror(err)));
  }
  pid_t child = spawn_helper(path, to_child[0], from_child[1]);
  int spawn_errno = errno;
  close(to_child[0]);
  close(from_child[1]);
  if (child < 0) {
    close(to_child[1]);
    close(from_child[0]);
    return std::unexpected(fmt::format("cannot run {}: {}", path, strerror(spawn_errno)));
  }
  // Non-blocking both ways, so one poll loop writes the request, reads the reply and notices a
  // signal or the deadline. A helper that died early makes the write fail with EPIPE (SIGPIPE
  // ignored meanwhile), not kill bpfql.
  fcntl(to_child[1], F_SETFL, O_NONBLOCK);
  fcntl(from_child[0], F_SETFL, O_NONBLOCK);
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  const int timeout_s = compile_timeout_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  // In pieces while it arrives: one growing string would double its capacity (and copy) past the
  // limit, a peak of twice kMaxReply before the limit is noticed.
  std::vector<std::string> pieces;
  size_t received = 0;
  std::string_view unsent = input;
  std::string failure;
  int in_fd = to_child[1];
  if (unsent.empty()) close(std::exchange(in_fd, -1));
  for (;;) {
    if (stop_signal_pending()) {
      failure = "interrupted by a signal";
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = fmt::format("the compiler process did not finish within {} s and was killed "
                            "(BPFQL_COMPILE_TIMEOUT sets the limit in seconds)",
                            timeout_s);
      break;
    }
    pollfd fds[2] = {{from_child[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    // 50 ms slices: a signal is noticed within that (it is blocked, so it cannot wake poll).
    int n = poll(fds, in_fd >= 0 ? 2 : 1, static_cast<int>(std::min<int64_t>(left.count(), 50)));
    if (n < 0 && errno != EINTR) {
      failure = fmt::format("poll: {}", strerror(errno));
      break;
    }
    if (in_fd >= 0 && fds[1].revents) {
      ssize_t w = write(in_fd, unsent.data(), unsent.size());
      if (w > 0) unsent.remove_prefix(static_cast<size_t>(w));
      if (unsent.empty() || (w < 0 && errno != EAGAIN && errno != EINTR))
        close(std::exchange(in_fd, -1));  // sent, or the helper stopped reading: its status says
    }
    if (fds[0].revents) {
      char buf[65536];
      ssize_t r = read(from_child[0], buf, sizeof buf);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;  // end of the reply
      if (r > 0) {
        if (received + static_cast<size_t>(r) > kMaxReply) {
          failure = fmt::format("the compiler process sent more than {} MiB; not a program",
                                kMaxReply >> 20);
          break;
        }
        received += static_cast<size_t>(r);
        pieces.emplace_back(buf, static_cast<size_t>(r));
      }
    }
  }
  sigaction(SIGPIPE, &old, nullptr);
  if (in_fd >= 0) close(in_fd);
  close(from_child[0]);
  if (!failure.empty()) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) return std::unexpected(failure);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::string reply;
    reply.reserve(received);
    for (const auto& piece : pieces) reply += piece;
    return reply;
  }
  return std::unexpected(child_death(status));
}

// Why a Plan goes to libbcc (compiler_for), for -v.
const char* why_libbcc(const Plan& plan) {
  if (plan.c_plain.empty()) return "the program uses USDT probes, or pt_regs off x86-64";
  if (compiler_for(plan) == Compiler::Libbcc) return "BPFQL_COMPILER=libbcc";
  return "after the one-pass compile";
}

// Runs the helper helper_path found; where it found none, its message is the outcome's error.
CompileOutcome run_compiler(const std::expected<std::string, std::string>& path,
                            const CompileRequest& request) {
  CompileOutcome r;
  if (!path) {
    r.error = path.error();
    return r;
  }
  auto reply = run_helper(*path, encode_request(request));
  if (!reply) {
    r.error = "failed to compile the generated BPF program: " + reply.error();
    return r;
  }
  if (auto outcome = decode_outcome(*reply)) return std::move(*outcome);
  r.error = fmt::format("failed to compile the generated BPF program: {} sent no result it "
                        "could read",
                        *path);
  return r;
}

}  // namespace

Compiler compiler_for(const Plan& plan) {
  if (plan.c_plain.empty()) return Compiler::Libbcc;
  const char* choice = std::getenv("BPFQL_COMPILER");
  return choice && std::string_view(choice) == "libbcc" ? Compiler::Libbcc : Compiler::Plain;
}

std::string_view helper_name(Compiler compiler) {
  return compiler == Compiler::Plain ? "bpfql-compile-plain" : "bpfql-compile-libbcc";
}

std::expected<std::string, std::string> helper_path(std::string_view name) {
  std::vector<fs::path> dirs;
  if (const char* dir = std::getenv("BPFQL_LIBEXEC_DIR"); dir != nullptr && *dir != '\0') {
    dirs.emplace_back(dir);  // the one place, when it is given
  } else {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      dirs.push_back(self.parent_path());
      dirs.push_back(self.parent_path().parent_path() / "libexec" / "bpfql");
    }
#ifdef BPFQL_LIBEXEC_DIR
    dirs.emplace_back(BPFQL_LIBEXEC_DIR);
#endif
  }
  // A helper runs as root: like the program cache, it must be a file only root (or whoever owns
  // the bpfql executable itself: a build tree) can have put there (trusted_path.h).
  std::vector<uid_t> trusted_uids = {0};
  struct stat self {};
  if (stat("/proc/self/exe", &self) == 0 && self.st_uid != 0) trusted_uids.push_back(self.st_uid);
  std::string looked;
  for (const auto& dir : dirs) {
    fs::path candidate = dir / name;
    if (access(candidate.c_str(), X_OK) == 0) {
      struct stat st {};
      std::string why = untrusted_directory_path(dir.string(), trusted_uids);
      if (why.empty())
        why = lstat(candidate.c_str(), &st) != 0 ? strerror(errno) : untrusted_file(st, trusted_uids);
      if (why.empty()) return candidate.string();
      return std::unexpected(fmt::format(
          "refusing to run {}: {} (a compile helper runs as root: it and every directory above "
          "it must be owned by root and writable by nobody else)",
          candidate.string(), why));
    }
    looked += (looked.empty() ? "" : ", ") + dir.string();
  }
  return std::unexpected(fmt::format(
      "cannot find {}, the part of bpfql that compiles programs (looked in {}); install bpfql "
      "with `cmake --install`, or run it from its build directory",
      name, looked));
}

CompileOutcome compile_in_child(const Plan& plan, bool full_verifier_log, Compiler compiler) {
  CompileRequest request = compile_request(plan, full_verifier_log);
  std::string note;
  if (compiler == Compiler::Plain) {
    auto plain_path = helper_path(helper_name(Compiler::Plain));
    // Not there: an incomplete install, where libbcc's helper would be missing too.
    CompileOutcome plain = run_compiler(plain_path, request);
    if (!plain_path) return plain;
    if (plain.image || stop_signal_pending()) return plain;  // Ctrl-C: no second compiler
    note = "the one-pass compile failed (" + plain.error + "); compiling with libbcc\n";
  } else {
    note = fmt::format("compiling with libbcc ({})\n", why_libbcc(plan));
  }
  CompileOutcome r = run_compiler(helper_path(helper_name(Compiler::Libbcc)), request);
  r.log = note + r.log;
  return r;
}

}  // namespace bpfql
