// `entry.EXPR` at a return probe: a value of the same call's entry, read back at its return.
// An implicit span from the function's entry probe to its return probe, keyed by the activation
// (the thread and the stack frame: x86-64's `ret` pops the return address the entry's stack
// pointer pointed at, so the return sees sp = entry sp + 8). What is stored is decided here: the
// distinct values the query's returns use, each once.
#pragma once

#include "compiler/check/check.h"

namespace bpfql {

// At most this many distinct entry values per query (each stored as 64 bits per call in flight).
inline constexpr size_t kMaxEntryValues = 8;

// The entry probe of a return probe: the same target and symbol (uretprobe → uprobe,
// kretprobe → kprobe).
ProbeRef entry_probe_of(const ProbeRef& ret);

// Whether `e` reads an entry value (outside `begin.` captures, which are the begin's).
bool reads_entry_value(const Expr& e);

// Fills q.entry_values once the query is typed: every `entry.EXPR` its expressions use, by text.
// An error when there are more than kMaxEntryValues, or when a probe that both ends and begins
// a span uses them (the two parts would each claim the one record).
Result<void> collect_entry_values(CheckedQuery& q);

}  // namespace bpfql
