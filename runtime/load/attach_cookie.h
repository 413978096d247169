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
// link fd go into `out`. Returns "" or the reason it failed; `*no_link` (when given) is set when
// the reason is that this kernel has no BPF link for perf events (before 5.15), and nothing is
// left in `out` then.
//
// Every tracepoint attached through a perf event is linked this way, cookie or not: closing the
// link detaches the program at once (microseconds), while closing the perf event waits for RCU
// grace periods (~40-70 ms per tracepoint, serialized in the kernel). The detach holder
// (detach.h) can then keep the perf events, with no program on them, while the kernel takes
// its time, and no program of the run outlives it.
std::string attach_tracepoint_with_cookie(int prog, const std::string& category,
                                          const std::string& name, uint64_t cookie,
                                          Attachments& out, bool* no_link = nullptr);

}  // namespace bpfql
