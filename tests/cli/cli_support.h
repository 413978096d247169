// What the CLI tests share: running the bpfql binary, and whether this machine can show them
// tracefs (and, as root, load programs).
#pragma once

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace bpfql::test {

// `bpfql ARGS...` to completion (60 s at most).
Completed bpfql(std::vector<std::string> args, const SpawnOptions& options = {});

// tracefs is readable here: tracepoint formats can be checked against the live kernel.
bool tracefs_readable();

// Root with tracefs, so programs can be loaded. As root (CI) nothing may be skipped: without
// tracefs it fails the test, saying to mount it (scripts/setup-host.sh). Not root: false.
bool root_with_tracefs();

}  // namespace bpfql::test
