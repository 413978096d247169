// Fast detach. Closing a tracepoint's (or uprobe's) perf event fd makes the kernel wait for RCU
// grace periods (synchronize_rcu_tasks_trace twice and synchronize_rcu, under event_mutex):
// ~65-70 ms per tracepoint here, serialized across threads, so 10 tracepoints take ~0.7 s even
// when closed in parallel (~0.43 s). Instead a forked holder process (its own session, stdio on
// /dev/null, every fd but the perf events closed with close_range) inherits the fds; the
// session's own closes are then cheap (not the last reference) and the holder pays for the grace
// periods after bpfql has exited. Tracepoints are attached through BPF links (attach_cookie.h),
// which the session closes itself: their programs come off at once, and the holder keeps only
// perf events with no program (a tracepoint callback that finds nothing to run) until the kernel
// is done with them, ~40-70 ms per tracepoint. Kprobes and uprobes (no link) keep their programs
// attached, writing to maps nobody reads, for that long.
#pragma once

#include <memory>

#include "runtime/load/attach.h"
#include "runtime/load/bpf_object.h"

namespace bpfql {

// Detaches everything and closes the BPF object's fds. With `background` (the default for runs), the
// slow part of the kernel's cleanup happens in a detached helper process; without it (or if
// fork fails, or a probe needs a tracefs event removed after close) it happens here.
void detach_all(std::unique_ptr<BpfObject> bpf, Attachments& probes, bool background);

}  // namespace bpfql
