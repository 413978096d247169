// A tracepoint attach that gives the program a BPF cookie (bpf_get_attach_cookie): a perf event
// on the tracepoint, linked to the program with BPF_LINK_CREATE and the cookie. One function can
// then serve every probe of a wildcard and still know which probe fired (`probe`, group_by:
// probe): one compile and one verifier run instead of one per probe.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/load/attach.h"

namespace bpfql {

// Attaches program `prog` to tracepoint "category:name" with `cookie`; the perf event fd and the
// link fd go into `out`. Returns "" or the reason it failed.
std::string attach_tracepoint_with_cookie(int prog, const std::string& category,
                                          const std::string& name, uint64_t cookie,
                                          Attachments& out);

}  // namespace bpfql
