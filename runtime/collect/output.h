// The one output interface: table, JSON, CSV and folded implement it; the session calls it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "runtime/collect/result.h"

namespace bpfql {

// Svg: a flame graph of the stacks; Heatmap: hist() columns over time in the terminal,
// HeatmapSvg: the same as an SVG picture.
enum class OutputFormat { Table, Json, Csv, Folded, Svg, Heatmap, HeatmapSvg };

// How a streamed event's time prints (--time): the wall clock ("14:53:11.123456", the default),
// seconds since boot as the kernel counts them ("8123.456789"), or the time since the query's
// previous event ("+0.000125"). JSON events always carry both "ts" (ns since boot) and "time"
// (ISO-8601, UTC, microseconds).
enum class TimeShown { Wall, Boot, Delta };

class Output {
 public:
  virtual ~Output() = default;
  virtual void interval(const IntervalResult& result) = 0;
  virtual void event(const StreamRow& row) = 0;
  // A streaming query's `limit` held back `count` events (> 0) in the window that just ended:
  // its interval, or the whole run.
  virtual void events_not_printed(const PlanQuery& query, uint64_t count) = 0;
  // A streaming query's window (its interval, with a `limit`) ended: rows held for it print now.
  virtual void window_ended(const PlanQuery&) {}
  // Writes what is due and flushes the stream. An output may hold streamed rows back for a
  // short while (the table sizes its columns over a batch of rows): it says until when here,
  // and the session calls flush() again by then. nullopt: nothing held.
  virtual void flush() = 0;
  virtual std::optional<std::chrono::steady_clock::time_point> flush_deadline() const {
    return std::nullopt;
  }
  // Called once every probe is attached (and privileges were dropped), before the first print.
  virtual void started() {}
  // Called once when the run ends, after the last print (folded and SVG output write then).
  virtual void finished() {}
};

// Writes to `out`, which must outlive the Output.
std::unique_ptr<Output> make_output(OutputFormat format, std::ostream& out,
                                    TimeShown time = TimeShown::Wall);

}  // namespace bpfql
