// When each aggregating query prints: every interval_ns (drift-free: deadlines advance by the
// interval, skipping ticks that were missed), or once at exit; stop_after (the earliest over all
// queries) ends the run. A streaming query with a `limit` has an entry too: its limit windows end
// on the same ticks (or once, at exit). Pure: driven by the times the session passes in.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "compiler/plan.h"

namespace bpfql {

using SteadyClock = std::chrono::steady_clock;

class Schedule {
 public:
  struct Entry {
    const PlanQuery* query;
    std::optional<SteadyClock::duration> interval;
    SteadyClock::time_point last_print;  // start of the period the next print covers
    SteadyClock::time_point next;        // next regular print (interval queries)
    size_t printed_digest = 0;           // of the last printed read (cumulative queries)
  };

  Schedule(const Plan& plan, SteadyClock::time_point start);

  // The earliest of the next interval prints and the stop time; nullopt: wait for a signal.
  std::optional<SteadyClock::time_point> next_wakeup() const;
  bool should_stop(SteadyClock::time_point now) const { return stop_at_ && now >= *stop_at_; }

  // Interval queries whose print is due at `now`; each is advanced past now.
  std::vector<Entry*> take_due(SteadyClock::time_point now);

  // The seconds a print at `now` covers: the interval for a regular tick, the time since the
  // last print for a final one; since the start for cumulative queries.
  double covered_seconds(const Entry& e, SteadyClock::time_point now, bool regular) const;

  // Every aggregating query's entry (and limited stream's), in plan order (for the final print).
  std::vector<Entry>& entries() { return entries_; }
  // Whether a final print of `e` at `now` may repeat the regular print just made: the final
  // read is then printed only if it found something new.
  bool just_printed(const Entry& e, SteadyClock::time_point now) const;

  // Milliseconds until `t` for epoll_wait, rounded up (never 0 before `t`); -1 for "forever".
  static int timeout_ms(std::optional<SteadyClock::time_point> t, SteadyClock::time_point now);

 private:
  SteadyClock::time_point start_;
  std::optional<SteadyClock::time_point> stop_at_;
  std::vector<Entry> entries_;
};

}  // namespace bpfql
