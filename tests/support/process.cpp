#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace bpfql::test {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The child's environment: ours, with options.env added or replacing. Built before fork().
std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    std::string key(entry.substr(0, entry.find('=')));
    if (!extra.contains(key)) env.emplace_back(entry);
  }
  for (const auto& [key, value] : extra) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(pid_t parent, int in_fd, int out_fd, int err_fd, int report_fd,
                             const char* cwd, char* const* argv, char* const* envp) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the test died before prctl took effect
  // A test runner started in the background ignores SIGINT; bpfql must see the default.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof e);
    ::_exit(127);
  }
  if (cwd && ::chdir(cwd) != 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(argv[0], argv, envp);
  int e = errno;
  (void)!::write(report_fd, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(code);
}

Process Process::spawn(const std::vector<std::string>& argv_in, const SpawnOptions& options) {
  if (argv_in.empty()) throw std::runtime_error("spawn: empty argv");
  // A child that closes its stdin early must not kill the test with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args = argv_in;
  std::vector<char*> argv = c_strings(args);
  std::vector<std::string> env_strings = environment_with(options.env);
  std::vector<char*> envp = c_strings(env_strings);

  int in[2], out[2], err[2], report[2];
  if (::pipe2(in, O_CLOEXEC) != 0) fail("pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) fail("pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) fail("pipe");
  if (::pipe2(report, O_CLOEXEC) != 0) fail("pipe");

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    exec_child(parent, in[0], out[1], err[1], report[1],
               options.cwd.empty() ? nullptr : options.cwd.c_str(), argv.data(), envp.data());
  }

  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(report[1]);
  Process p;
  p.pid_ = pid;
  p.in_fd_ = in[1];
  p.out_fd_ = out[0];
  p.err_fd_ = err[0];
  ::fcntl(p.out_fd_, F_SETFL, O_NONBLOCK);
  ::fcntl(p.err_fd_, F_SETFL, O_NONBLOCK);

  // The report pipe closes on a successful exec, or carries the errno of a failed one.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == sizeof exec_errno) {
    p.wait(milliseconds(5000));
    errno = exec_errno;
    fail("cannot execute " + argv_in[0]);
  }
  return p;
}

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    kill();
    close_fds();
    pid_ = std::exchange(other.pid_, -1);
    in_fd_ = std::exchange(other.in_fd_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    status_ = std::exchange(other.status_, std::nullopt);
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
  }
  return *this;
}

Process::~Process() {
  kill();
  close_fds();
}

void Process::close_fds() {
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
}

void Process::reap_if_exited() {
  if (pid_ < 0 || status_) return;
  int raw = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &raw, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    ExitStatus s;
    if (WIFEXITED(raw)) s.code = WEXITSTATUS(raw);
    if (WIFSIGNALED(raw)) s.signal = WTERMSIG(raw);
    status_ = s;
  } else if (r < 0) {
    status_ = ExitStatus{};  // not our child any more (cannot happen); never wait on it again
  }
}

bool Process::running() {
  reap_if_exited();
  return pid_ >= 0 && !status_;
}

bool Process::pump(milliseconds budget) {
  pollfd fds[2];
  int* owners[2];
  nfds_t n = 0;
  for (int* fd : {&out_fd_, &err_fd_}) {
    if (*fd < 0) continue;
    fds[n] = {*fd, POLLIN, 0};
    owners[n] = fd;
    ++n;
  }
  if (n == 0) return false;
  int ready = ::poll(fds, n, static_cast<int>(std::max<long long>(budget.count(), 0)));
  if (ready <= 0) return true;
  char buf[65536];
  for (nfds_t i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    std::string& sink = owners[i] == &out_fd_ ? out_ : err_;
    for (;;) {
      ssize_t got = ::read(*owners[i], buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_fd(*owners[i]);  // EOF or a real error
      break;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

bool Process::wait_for(const std::string& stream, std::string_view needle, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (stream.find(needle) != std::string::npos) return true;
    reap_if_exited();
    bool pipes_open = out_fd_ >= 0 || err_fd_ >= 0;
    if (status_ && !pipes_open) return false;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return stream.find(needle) != std::string::npos;
    if (pipes_open) {
      pump(std::min(left, milliseconds(20)));
    } else {
      ::usleep(10000);
    }
  }
}

bool Process::wait_for_stderr(std::string_view needle, milliseconds timeout) {
  return wait_for(err_, needle, timeout);
}

bool Process::wait_for_stdout(std::string_view needle, milliseconds timeout) {
  return wait_for(out_, needle, timeout);
}

bool Process::write_stdin(std::string_view text) {
  while (!text.empty() && in_fd_ >= 0) {
    ssize_t put = ::write(in_fd_, text.data(), text.size());
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    text.remove_prefix(static_cast<size_t>(put));
  }
  return text.empty();
}

void Process::close_stdin() { close_fd(in_fd_); }

void Process::signal(int sig) {
  reap_if_exited();
  if (pid_ >= 0 && !status_) ::kill(pid_, sig);
}

std::optional<ExitStatus> Process::wait(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    reap_if_exited();
    bool pipes_open = out_fd_ >= 0 || err_fd_ >= 0;
    if (status_ && !pipes_open) return status_;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      // Exited but something else (a grandchild) still holds a pipe: the status is what counts.
      return status_;
    }
    if (pipes_open) {
      pump(std::min(left, milliseconds(20)));
    } else {
      ::usleep(5000);
    }
  }
}

void Process::kill() {
  reap_if_exited();
  if (pid_ < 0 || status_) return;
  ::kill(pid_, SIGKILL);
  int raw = 0;
  while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
  }
  ExitStatus s{-1, SIGKILL};
  if (WIFEXITED(raw)) s = ExitStatus{WEXITSTATUS(raw), 0};  // it exited just before the kill
  status_ = s;
}

Completed run_to_completion(const std::vector<std::string>& argv, milliseconds timeout,
                            std::string_view input, const SpawnOptions& options) {
  Process p = Process::spawn(argv, options);
  p.write_stdin(input);
  p.close_stdin();
  Completed result;
  std::optional<ExitStatus> status = p.wait(timeout);
  if (!status) {
    p.kill();
    result.timed_out = true;
    result.status = ExitStatus{-1, SIGKILL};
  } else {
    result.status = *status;
  }
  result.out = p.out();
  result.err = p.err();
  return result;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.emplace_back(text.substr(start));
      break;
    }
    lines.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace bpfql::test
