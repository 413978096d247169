// Where `--pid` (and `-c`, and a query's `pid:`) filters a span: the filter reads the task the
// probe runs in, which at some tracepoints is not the task the span is about (a sched_switch
// runs in the task switched out; a sched_wakeup in the waker). A side filters only when its
// probes run in the span's task; an end then finds only the spans its filtered begin stored,
// and a begin filtered nowhere is still ended only by that process's ends. Where neither side
// does, both filter when they run in one context (an irq's entry and exit, in the task it
// interrupts); a span whose keys name no task (a block request, a socket) is the process's that
// began it, so the begin filters; otherwise it is an error: filtering would pair the wrong
// tasks' events.
#pragma once

#include "compiler/check/check.h"

namespace bpfql {

// Sets q.pid_at_begin / q.pid_at_end; an error (at the span) when neither side can filter.
Result<void> check_pid_sides(CheckedQuery& q);

}  // namespace bpfql
