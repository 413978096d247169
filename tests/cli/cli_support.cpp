#include "tests/cli/cli_support.h"

#include <doctest/doctest.h>
#include <unistd.h>

namespace bpfql::test {

Completed bpfql(std::vector<std::string> args, const SpawnOptions& options) {
  args.insert(args.begin(), BPFQL_BINARY);
  return run_to_completion(args, milliseconds(60000), {}, options);
}

bool tracefs_readable() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    std::string format = std::string(dir) + "/events/syscalls/sys_enter_openat/format";
    if (::access(format.c_str(), R_OK) == 0) return true;
  }
  return false;
}

bool root_with_tracefs() {
  if (::geteuid() != 0) return false;
  REQUIRE_MESSAGE(tracefs_readable(),
                  "running as root, but tracefs is not readable: mount it "
                  "(scripts/setup-host.sh) so that these tests run");
  return true;
}

}  // namespace bpfql::test
