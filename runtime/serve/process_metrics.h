// The self metrics every Prometheus exporter carries, for `bpfql serve`: process_* (CPU seconds,
// resident and virtual memory, open and maximum fds, start time; the names and meanings of the
// Prometheus client libraries' process collector) and bpfql_build_info. Read from /proc/self.
#pragma once

#include <string>

namespace bpfql {

// The families as exposition text. `version`: bpfql's version for bpfql_build_info.
std::string render_process_metrics(const std::string& version);

}  // namespace bpfql
