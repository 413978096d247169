// Print schedule of a run (see schedule.h).
#include "runtime/schedule.h"

#include <algorithm>
#include <limits>

namespace bpfql {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

Schedule::Schedule(const Plan& plan, SteadyClock::time_point start) : start_(start) {
  for (const auto& q : plan.queries) {
    if (q.stop_after_ns) {
      auto at = start + duration_cast<SteadyClock::duration>(nanoseconds(*q.stop_after_ns));
      stop_at_ = stop_at_ ? std::min(*stop_at_, at) : at;
    }
    if (q.streaming && q.limit == 0) continue;  // nothing to print on a tick
    Entry e{&q, std::nullopt, start, SteadyClock::time_point::max()};
    if (q.interval_ns && *q.interval_ns > 0) {
      e.interval = duration_cast<SteadyClock::duration>(nanoseconds(*q.interval_ns));
      e.next = start + *e.interval;
    }
    entries_.push_back(e);
  }
}

std::optional<SteadyClock::time_point> Schedule::next_wakeup() const {
  std::optional<SteadyClock::time_point> t = stop_at_;
  for (const auto& e : entries_)
    if (e.interval) t = t ? std::min(*t, e.next) : e.next;
  return t;
}

std::vector<Schedule::Entry*> Schedule::take_due(SteadyClock::time_point now) {
  std::vector<Entry*> due;
  for (auto& e : entries_) {
    if (!e.interval || now < e.next) continue;
    due.push_back(&e);
    while (e.next <= now) e.next += *e.interval;  // a late wakeup prints once, not per missed tick
  }
  return due;
}

double Schedule::covered_seconds(const Entry& e, SteadyClock::time_point now, bool regular) const {
  auto seconds = [](SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (e.query->cumulative) return seconds(now - start_);
  if (regular && e.interval) return seconds(*e.interval);
  return seconds(now - e.last_print);
}

bool Schedule::just_printed(const Entry& e, SteadyClock::time_point now) const {
  return e.interval && e.last_print != start_ && now - e.last_print < std::chrono::milliseconds(10);
}

int Schedule::timeout_ms(std::optional<SteadyClock::time_point> t, SteadyClock::time_point now) {
  if (!t) return -1;
  if (*t <= now) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(*t - now).count();
  return static_cast<int>(std::min<long long>(ms, std::numeric_limits<int>::max()));
}

}  // namespace bpfql
