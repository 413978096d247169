// `bpfql kernel export`: a KernelSnapshot of the running kernel, whole or for some queries.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/kernel/kernel_snapshot.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {

// What a partial snapshot keeps (from RecordingCatalog after checking the queries).
struct SnapshotSelection {
  std::vector<std::string> queries;  // as the user named them, for `exported_for`
  std::set<std::string> tracepoints;
  std::set<std::string> structs;
};

// Every tracepoint format and all of vmlinux BTF; with `only`, just what it lists (BTF as a
// subset rooted at its structs). Errors: tracefs unusable, a format file unreadable.
Result<KernelSnapshot> export_running_kernel(const TracefsCatalog& live,
                                             const SnapshotSelection* only = nullptr);

}  // namespace bpfql
