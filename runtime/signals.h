// SIGINT, SIGTERM and SIGHUP as a readable fd (signalfd), so the run loop waits for signals and
// perf buffers in one epoll_wait. While a SignalFd lives those signals are blocked (they queue
// for the fd, even during the load) and SIGPIPE is ignored (a closed output pipe then shows as a
// write error that ends the run cleanly). SIGINT and SIGTERM are taken back if they were ignored
// (shells start background jobs with SIGINT ignored); an ignored SIGHUP (nohup) stays ignored.
// The destructor restores the mask and SIGPIPE, and leaves the three stop signals ignored: it
// goes when the run is over, and a late stop signal must not kill bpfql before it exits.
#pragma once

#include <signal.h>

#include <vector>

#include "runtime/kernel/pending_signals.h"

namespace bpfql {

class SignalFd {
 public:
  SignalFd();
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const { return fd_; }  // -1 when signalfd failed (error() says why)
  int error() const { return error_; }
  // Consumes the queued signals; returns the last one's number, or 0 when none was queued.
  int take();
  // Consumes the queued signals; `stop`: SIGINT or SIGTERM among them (or SIGHUP unless
  // set_sighup_reloads), `reload`: SIGHUP among them when it reloads.
  struct Taken {
    bool stop = false;
    bool reload = false;
  };
  Taken take_all();

 private:
  int fd_ = -1;
  int error_ = 0;
  sigset_t old_mask_;
  struct sigaction old_pipe_ {};
};

}  // namespace bpfql
