// Pending stop signals (see pending_signals.h).
#include "runtime/kernel/pending_signals.h"

#include <signal.h>

namespace bpfql {

bool stop_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

}  // namespace bpfql
