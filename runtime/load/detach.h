// Fast detach. Closing a tracepoint's (or uprobe's) perf event fd makes the kernel wait for RCU
// grace periods (synchronize_rcu_tasks_trace twice and synchronize_rcu, under event_mutex):
// ~65-70 ms per tracepoint here, serialized across threads, so 10 tracepoints take ~0.7 s even
// when closed in parallel (~0.43 s). Instead a forked holder process (its own session, stdio on
// /dev/null, every fd but the perf events closed with close_range) inherits the fds; the
// session's own closes are then cheap (not the last reference) and the holder pays for the grace
// periods after bpfql has exited. Tracepoints are attached through BPF links (attach_cookie.h):
// once bpfql has let go, the holder closes every link at once (one task each, so that their RCU
// grace periods overlap), which takes every program off its tracepoint; the programs are gone
// ~one grace period later (~0.1 s for 360 tracepoints, where closing the links one by one took
// 12 s and the perf events 24 s). The perf events, with no program on them (a tracepoint callback
// that finds nothing to run), are closed after that, ~40-70 ms per tracepoint, one after another
// in the kernel. Kprobes and uprobes (no link) keep their programs attached that long.
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
