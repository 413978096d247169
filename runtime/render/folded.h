// Folded stacks for flame graphs (`--format folded`, input to flamegraph.pl / speedscope /
// inferno):
//   nginx;__libc_write;entry_SYSCALL_64;do_syscall_64;ksys_write 42
// Frames run outermost first: the row's other key cells (comm, pid, ...) in column order, then
// user stacks, then kernel stacks, each outermost frame first. The count is the row's first
// numeric aggregate (a stats() count counts too); a streamed event counts 1. Rows with nothing
// to fold (no keys) or nothing to count are skipped. ';' inside a frame becomes ':'.
// Dropped keys and lost events go to `notes` (stderr).
#pragma once

#include <memory>
#include <ostream>

#include "runtime/collect/output.h"

namespace bpfql {

std::unique_ptr<Output> make_folded_output(std::ostream& out, std::ostream& notes);

}  // namespace bpfql
