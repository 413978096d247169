// The one output interface: table, JSON, CSV and folded implement it; the session calls it.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "runtime/collect/result.h"

namespace bpfql {

enum class OutputFormat { Table, Json, Csv, Folded };

class Output {
 public:
  virtual ~Output() = default;
  virtual void interval(const IntervalResult& result) = 0;
  virtual void event(const StreamRow& row) = 0;
  // A streaming query's `limit` held back `count` events (> 0) in the window that just ended:
  // its interval, or the whole run.
  virtual void events_not_printed(const PlanQuery& query, uint64_t count) = 0;
  virtual void flush() = 0;
  // Called once every probe is attached (and privileges were dropped), before the first print.
  virtual void started() {}
};

// Writes to `out`, which must outlive the Output.
std::unique_ptr<Output> make_output(OutputFormat format, std::ostream& out);

}  // namespace bpfql
