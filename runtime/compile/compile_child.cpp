// Running the compile helpers (see compile_child.h).
#include "runtime/compile/compile_child.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/compile/pipe_io.h"

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

// Runs `path` with `input` on its stdin; its stdout, or why there is none.
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
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::string argv0 = fs::path(path).filename();
  char* argv[] = {argv0.data(), nullptr};
  pid_t child = -1;
  int rc = posix_spawn(&child, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return std::unexpected(fmt::format("cannot run {}: {}", path, strerror(rc)));
  }
  // The helper reads the whole request before it writes: no deadlock on full pipes. A helper
  // that died early makes the write fail with EPIPE, not kill bpfql with SIGPIPE.
  struct sigaction ignore{}, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  write_all(to_child[1], input);
  sigaction(SIGPIPE, &old, nullptr);
  close(to_child[1]);
  std::string reply = read_all(from_child[0]);
  close(from_child[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return reply;
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
  std::string looked;
  for (const auto& dir : dirs) {
    fs::path candidate = dir / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
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
    if (plain.image) return plain;
    note = "the one-pass compile failed (" + plain.error + "); compiling with libbcc\n";
  } else {
    note = fmt::format("compiling with libbcc ({})\n", why_libbcc(plan));
  }
  CompileOutcome r = run_compiler(helper_path(helper_name(Compiler::Libbcc)), request);
  r.log = note + r.log;
  return r;
}

}  // namespace bpfql
