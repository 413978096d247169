// Span rules the checker applies once the whole query is typed: what a begin may capture for a
// streaming end, and the warning for a span keyed by the current task across tracepoints that
// run in different tasks.
#pragma once

#include "compiler/check/check.h"

namespace bpfql {

// A stack captured at the begin is stored as a stack id: a streamed event carries addresses,
// so `begin.kstack`/`begin.ustack` must be a group_by key.
Result<void> check_span_captures(const CheckedQuery& q);

// Adds a warning when a side of the span key reads the current task (pid, tid, comm, ...) at a
// tracepoint that runs in another task than the one it is about, and begin and end differ.
void warn_task_context(CheckedQuery& q);

// Where a tracepoint runs when it is not in the task it describes, and the field that names
// that task; nullptr for tracepoints that run in their own task.
struct ForeignContext {
  const char* runs_in;  // "the waker"
  const char* instead;  // "args.pid"
};
const ForeignContext* foreign_context(const ProbeRef& probe);

}  // namespace bpfql
