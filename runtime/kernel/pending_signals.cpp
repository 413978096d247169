// Pending stop signals (see pending_signals.h).
#include "runtime/kernel/pending_signals.h"

#include <signal.h>

namespace bpfql {

namespace {
bool hup_reloads = false;
}

void set_sighup_reloads(bool reloads) { hup_reloads = reloads; }
bool sighup_reloads() { return hup_reloads; }

bool stop_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         (!hup_reloads && sigismember(&pending, SIGHUP) == 1);
}

}  // namespace bpfql
