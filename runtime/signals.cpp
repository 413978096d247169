// signalfd for the run loop (see signals.h).
#include "runtime/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/kernel/pending_signals.h"

namespace bpfql {

SignalFd::SignalFd() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &mask, &old_mask_);
  // An ignored signal is discarded before signalfd can see it. Shells start background jobs
  // with SIGINT ignored, and `kill -INT` must still end a run: take SIGINT and SIGTERM back
  // (blocked, so the default action never runs). An ignored SIGHUP is nohup's: respected.
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    sigaction(sig, nullptr, &current);
    if (current.sa_handler != SIG_IGN) continue;
    struct sigaction deflt {};
    deflt.sa_handler = SIG_DFL;
    sigaction(sig, &deflt, nullptr);
  }
  fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) error_ = errno;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe_);
}

SignalFd::~SignalFd() {
  take();  // a second Ctrl-C still queued would otherwise kill us as soon as it is unblocked
  if (fd_ >= 0) close(fd_);
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  // The run is over (its final result printed, its probes detached) and bpfql is about to exit
  // with its own status: a stop signal from now on (a second Ctrl-C, a supervisor's SIGTERM
  // racing the traced process's exit) has nothing left to stop and must not turn that status
  // into "killed by SIGINT". So the three are ignored, not given back to their default action.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &ignore, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalFd::take() {
  int last = 0;
  signalfd_siginfo info;
  while (fd_ >= 0 && read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
    last = static_cast<int>(info.ssi_signo);
  return last;
}

SignalFd::Taken SignalFd::take_all() {
  Taken taken;
  signalfd_siginfo info;
  while (fd_ >= 0 && read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGHUP && sighup_reloads())
      taken.reload = true;
    else
      taken.stop = true;
  }
  return taken;
}

}  // namespace bpfql
