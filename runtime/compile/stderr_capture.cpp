// Redirects fd 2 into a memfd while libbcc runs (see stderr_capture.h).
#include "runtime/compile/stderr_capture.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace bpfql {
namespace {

// LLVM calls exit(1) from inside init() on some errors (a stack over 512 bytes). The message it
// printed is then in the capture; this atexit hook puts it back on the real stderr.
int g_saved_fd = -1;
int g_capture_fd = -1;

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  if (lseek(fd, 0, SEEK_SET) < 0) return out;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

void replay_on_exit() {
  if (g_saved_fd < 0) return;
  fflush(stderr);
  dup2(g_saved_fd, STDERR_FILENO);
  std::string text = without_libbcc_noise(read_all(g_capture_fd));
  if (!text.empty()) (void)!write(STDERR_FILENO, text.data(), text.size());
}

// LLVM's report_fatal_error() ends in abort(): replay the capture (unfiltered: only
// async-signal-safe calls here), then die as abort() meant to.
struct sigaction g_old_abort {};

void replay_on_abort(int) {
  if (g_saved_fd >= 0) {
    dup2(g_saved_fd, STDERR_FILENO);
    char buf[4096];
    ssize_t n;
    if (lseek(g_capture_fd, 0, SEEK_SET) == 0)
      while ((n = read(g_capture_fd, buf, sizeof buf)) > 0) (void)!write(STDERR_FILENO, buf, n);
  }
  sigaction(SIGABRT, &g_old_abort, nullptr);
  raise(SIGABRT);
}

}  // namespace

StderrCapture::StderrCapture() {
  static const bool registered = (std::atexit(replay_on_exit) == 0);
  (void)registered;
  capture_fd_ = memfd_create("bpfql-stderr", MFD_CLOEXEC);
  if (capture_fd_ < 0) return;
  fflush(stderr);
  saved_fd_ = dup(STDERR_FILENO);
  if (saved_fd_ < 0 || dup2(capture_fd_, STDERR_FILENO) < 0) {
    if (saved_fd_ >= 0) close(saved_fd_);
    close(capture_fd_);
    saved_fd_ = capture_fd_ = -1;
    return;
  }
  g_saved_fd = saved_fd_;
  g_capture_fd = capture_fd_;
  struct sigaction on_abort {};
  on_abort.sa_handler = replay_on_abort;
  sigaction(SIGABRT, &on_abort, &g_old_abort);
}

std::string StderrCapture::finish() {
  if (saved_fd_ < 0) return {};
  fflush(stderr);
  dup2(saved_fd_, STDERR_FILENO);
  close(saved_fd_);
  std::string text = read_all(capture_fd_);
  close(capture_fd_);
  saved_fd_ = capture_fd_ = -1;
  g_saved_fd = g_capture_fd = -1;
  sigaction(SIGABRT, &g_old_abort, nullptr);
  return text;
}

StderrCapture::~StderrCapture() { finish(); }

std::string without_libbcc_noise(std::string_view text) {
  std::string out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.find("sha1 socket not available") != std::string::npos) continue;
    if (line.find("cannot get prog tag") != std::string::npos) continue;
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace bpfql
