// NDJSON output (spec §6): one object per query per interval, one object per streamed event.
//   {"query":"opens","time":"2026-11-29T11:00:05Z","interval_s":5,"rows":[{"comm":"nginx","count()":42}],"dropped":0,"lost":0}
//   {"query":"execs","ts":123456789,"pid":42,"comm":"sh","args.filename":"/bin/ls"}
#pragma once

#include <memory>
#include <ostream>

#include "runtime/collect/output.h"
#include "runtime/render/format_cell.h"

namespace bpfql {

// What the limit of a streaming query held back goes to `notes` (stderr).
std::unique_ptr<Output> make_json_output(std::ostream& out, std::ostream& notes);

// The objects themselves, for other emitters (keys in column order).
OrderedJson interval_json(const IntervalResult& result);
OrderedJson event_json(const StreamRow& row);

}  // namespace bpfql
