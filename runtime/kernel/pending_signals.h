// Whether a stop signal waits: the slow steps before the run loop (waiting for a FIFO's reader,
// compiling, loading, attaching) check it so that Ctrl-C ends them at once. SIGINT, SIGTERM and
// SIGHUP are blocked by then (runtime/signals.h), so they stay pending until read.
#pragma once

namespace bpfql {

// True when SIGINT, SIGTERM or SIGHUP is pending (blocked) for this thread or process.
bool stop_signal_pending();

// `bpfql serve`: SIGHUP asks for a reload (runtime/serve/reload.h), not a stop; from then on
// stop_signal_pending() ignores it, so a SIGHUP during a reload's load does not abort it.
void set_sighup_reloads(bool reloads);
bool sighup_reloads();

}  // namespace bpfql
