// CSV output (RFC 4180 quoting, "\n" line ends). Before a query's first row, a header line:
//   query,time,comm,count()          (aggregates: time is the interval's UTC ISO-8601 time)
//   query,ts,pid,comm,args.filename  (streams: ts in ns, as in JSON)
// Histogram, percentile, stats and stack cells are their compact JSON, quoted.
// Dropped keys and lost events go to `notes` (stderr), since a CSV row has no place for them.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "runtime/collect/output.h"

namespace bpfql {

std::unique_ptr<Output> make_csv_output(std::ostream& out, std::ostream& notes);

// One field, quoted when it holds a comma, quote, CR or LF (quotes doubled).
std::string csv_field(std::string_view text);

}  // namespace bpfql
