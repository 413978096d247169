// Detaching through a helper process that holds the last references (see detach.h).
#include "runtime/load/detach.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace bpfql {
namespace {

// Whether fd is a perf event (its /proc/self/fd link says "anon_inode:[perf_event]").
bool is_perf_event(int fd) {
  char target[64];
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
  if (len < 0) return false;
  return std::string_view(target, static_cast<size_t>(len)) == "anon_inode:[perf_event]";
}

// The perf event fds open in this process (attached probes, and perf buffers, whose close can
// wait for the kernel too), ascending. Read from the list of open fds (tens of entries), before
// the fork: the holder then closes the rest with close_range instead of probing every number.
std::vector<int> open_perf_events(const Attachments& probes) {
  std::vector<int> fds;
  if (DIR* dir = opendir("/proc/self/fd")) {
    int own = dirfd(dir);
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int fd = std::atoi(e->d_name);
      if (fd > STDERR_FILENO && fd != own && is_perf_event(fd)) fds.push_back(fd);
    }
    closedir(dir);
  } else {
    for (const auto& p : probes.owned()) fds.push_back(p.fd);  // at least the probes
  }
  std::sort(fds.begin(), fds.end());
  fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
  return fds;
}

// The BPF link fds of the attachments, ascending.
std::vector<int> link_fds(const Attachments& probes) {
  std::vector<int> fds;
  for (const auto& p : probes.owned())
    if (p.link && p.fd > STDERR_FILENO) fds.push_back(p.fd);
  std::sort(fds.begin(), fds.end());
  fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
  return fds;
}

// Runs in a task of its own that shares the holder's memory and fd table: closes one link.
int close_link(void* fd) {
  syscall(SYS_close, static_cast<long>(reinterpret_cast<intptr_t>(fd)));
  syscall(SYS_exit, 0);
  return 0;
}

// Closing a tracepoint program's link takes the program off the tracepoint at once, then waits
// for an RCU Tasks Trace grace period (~30 ms here) before the program can be freed; one close
// after another, 360 links took 12 s. Each link is closed by a task of its own, so the grace
// periods overlap and every program is gone after about one. The tasks are clone()s sharing
// memory and fds (no copy of the page tables; async-signal-safe calls only), on small stacks.
void close_links_in_parallel(const int* links, size_t nlinks) {
  constexpr size_t kStack = 16 * 1024;
  for (size_t i = 0; i < nlinks; ++i) {
    void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    void* arg = reinterpret_cast<void*>(static_cast<intptr_t>(links[i]));
    if (stack == MAP_FAILED ||
        clone(close_link, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_FS | CLONE_FILES,
              arg) < 0)
      close(links[i]);
  }
}

// In the child: only async-signal-safe calls (the parent may have had other threads).
// Keeps `keep` (ascending, the perf events, the links and the release pipe), closes every other
// fd (nobody waiting on bpfql's pipes, sockets or files must wait for this process too), waits
// for the session to let go (it has closed its own copies of the links by then, so the closes
// here are the last ones), closes the links in parallel, and exits.
[[noreturn]] void hold_until_parent_done(int release_fd, const int* keep, size_t nkeep,
                                         const int* links, size_t nlinks) {
  if (chdir("/") != 0) {
  }
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
  }
  unsigned from = STDERR_FILENO + 1;
  for (size_t i = 0; i < nkeep; ++i) {
    unsigned k = static_cast<unsigned>(keep[i]);
    if (k > from) close_range(from, k - 1, 0);
    if (k + 1 > from) from = k + 1;
  }
  close_range(from, ~0U, 0);
  char c;
  while (read(release_fd, &c, 1) > 0) {
  }
  close_links_in_parallel(links, nlinks);
  // The fd table is shared with the closing tasks: the perf events (no program on them any
  // more) are closed when the last of them exits, one tracepoint after another, ~40-70 ms each.
  _exit(0);
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
// One fork (not a double fork: each copies the page tables of the session's process, and that
// is most of what a detach costs). Returns false when it could not.
bool spawn_holder(const Attachments& probes, int* release) {
  reap_finished_holders();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  std::vector<int> keep = open_perf_events(probes);
  std::vector<int> links = link_fds(probes);
  for (int fd : links)
    if (!std::binary_search(keep.begin(), keep.end(), fd))
      keep.insert(std::upper_bound(keep.begin(), keep.end(), fd), fd);
  keep.insert(std::upper_bound(keep.begin(), keep.end(), pipe_fds[0]), pipe_fds[0]);
  pid_t child = fork();
  if (child < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return false;
  }
  if (child == 0) {
    setsid();  // out of the terminal's process group: a second Ctrl-C does not reach it
    hold_until_parent_done(pipe_fds[0], keep.data(), keep.size(), links.data(), links.size());
  }
  close(pipe_fds[0]);
  holders().push_back(child);
  *release = pipe_fds[1];
  return true;
}

}  // namespace

void detach_all(std::unique_ptr<BpfObject> bpf, Attachments& probes, bool background) {
  int release = -1;
  if (background && probes.fd_only() && spawn_holder(probes, &release)) {
    // Not the last references (the holder has them all): each close returns at once. The
    // holder closes the links once `release` is closed, after these.
    for (auto& p : probes.owned())
      if (p.link) close(p.fd);
    for (auto& p : probes.owned())
      if (!p.link) close(p.fd);
    probes.owned().clear();
    bpf.reset();  // programs and maps: the holder's perf events keep them alive
    close(release);
    return;
  }
  if (release >= 0) close(release);
  probes.close_all();
  bpf.reset();
}

}  // namespace bpfql
