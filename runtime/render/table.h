// The default output: bpftrace-like text for people at a terminal.
//
//   --- opens  11:00:05  (5s) ---
//   comm    count()
//   nginx        42
//   sshd          7
//   dropped 3 map updates (a map was full: raise max_entries)
//
// Histograms and stacks print below their row, indented, one bucket or frame per line.
// Streamed events print one line each under a header that repeats when the query changes; a
// window whose `limit` held events back ends with "... 1234 more events not printed (limit 2)".
#pragma once

#include <memory>
#include <ostream>

#include "runtime/collect/output.h"

namespace bpfql {

// `time`: how streamed events show their time (wall clock by default).
std::unique_ptr<Output> make_table_output(std::ostream& out, TimeShown time = TimeShown::Wall);

}  // namespace bpfql
