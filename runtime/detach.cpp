// Detaching through a helper process that holds the last references (see detach.h).
#include "runtime/detach.h"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace bpfql {
namespace {

// Whether fd is a perf event (readlink of /proc/self/fd/N says "anon_inode:[perf_event]").
// Built by hand: snprintf is not async-signal-safe.
bool is_perf_event(int fd) {
  char path[32] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0);
  size_t at = 14;
  while (n > 0) path[at++] = digits[--n];
  path[at] = '\0';
  char target[64];
  ssize_t len = readlink(path, target, sizeof target - 1);
  if (len < 0) return false;
  target[len] = '\0';
  const char want[] = "anon_inode:[perf_event]";
  for (size_t i = 0; i < sizeof want; ++i)
    if (target[i] != want[i]) return false;
  return true;
}

// In the grandchild: only async-signal-safe calls (the parent may have had other threads).
// Keeps the perf event fds, closes everything else (nobody waiting on bpfql's pipes, sockets or
// files must wait for this process too), then waits for the session to let go.
[[noreturn]] void hold_until_parent_done(int release_fd, int max_fd) {
  if (chdir("/") != 0) {
  }
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
  }
  for (int fd = 3; fd < max_fd; ++fd)
    if (fd != release_fd && !is_perf_event(fd)) close(fd);
  char c;
  while (read(release_fd, &c, 1) > 0) {
  }
  _exit(0);  // the kernel closes the perf event fds here, paying the grace periods
}

// Holders still running from earlier detaches in this process (tests run several plans): reaped
// when done so they do not linger as zombies. The bpfql CLI exits right after, and init reaps.
std::vector<pid_t>& holders() {
  static std::vector<pid_t> pids;
  return pids;
}

void reap_finished_holders() {
  auto& pids = holders();
  std::erase_if(pids, [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; });
}

// Forks a holder child that keeps this process's perf event fds until `*release` is closed.
// One fork (not a double fork: each copies the page tables of a ~120 MB process, and that is
// most of what a detach costs). Returns false when it could not.
bool spawn_holder(int* release) {
  reap_finished_holders();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  pid_t child = fork();
  if (child < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return false;
  }
  if (child == 0) {
    setsid();  // out of the terminal's process group: a second Ctrl-C does not reach it
    close(pipe_fds[1]);
    hold_until_parent_done(pipe_fds[0], static_cast<int>(max_fd));
  }
  close(pipe_fds[0]);
  holders().push_back(child);
  *release = pipe_fds[1];
  return true;
}

}  // namespace

void detach_all(std::unique_ptr<ebpf::BPF> bpf, Attachments& probes, bool background) {
  int release = -1;
  if (background && probes.fd_only() && spawn_holder(&release)) {
    for (auto& p : probes.owned()) close(p.fd);  // not the last reference: returns at once
    probes.owned().clear();
    bpf.reset();  // USDT uprobes and programs: the same, the holder keeps them alive
    close(release);
    return;
  }
  if (release >= 0) close(release);
  probes.close_all();
  bpf.reset();
}

}  // namespace bpfql
