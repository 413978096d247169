// When queries print: intervals without drift, once at exit, stop_after, final partial prints.
#include "runtime/schedule.h"

#include <doctest/doctest.h>

using namespace bpfql;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

Plan plan_with(std::optional<uint64_t> interval_ns, std::optional<uint64_t> stop_ns) {
  Plan p;
  PlanQuery a;
  a.name = "a";
  a.interval_ns = interval_ns;
  a.stop_after_ns = stop_ns;
  PlanQuery b;
  b.name = "b";  // no interval: prints at exit only
  PlanQuery s;
  s.name = "s";
  s.streaming = true;  // a stream without a limit: never in the schedule
  p.queries = {a, b, s};
  return p;
}

}  // namespace

TEST_CASE("interval queries are due every interval; others only appear for the final print") {
  Plan p = plan_with(1'000'000'000, std::nullopt);
  auto t0 = SteadyClock::time_point{} + seconds(100);
  Schedule s(p, t0);
  CHECK(s.entries().size() == 2);
  CHECK(s.next_wakeup() == t0 + seconds(1));
  CHECK(s.take_due(t0 + milliseconds(999)).empty());
  auto due = s.take_due(t0 + seconds(1));
  REQUIRE(due.size() == 1);
  CHECK(due[0]->query->name == "a");
  CHECK(s.next_wakeup() == t0 + seconds(2));
  CHECK(!s.should_stop(t0 + seconds(1000)));
}

TEST_CASE("a late wakeup prints once and keeps the original cadence") {
  Plan p = plan_with(1'000'000'000, std::nullopt);
  auto t0 = SteadyClock::time_point{} + seconds(100);
  Schedule s(p, t0);
  CHECK(s.take_due(t0 + milliseconds(3500)).size() == 1);
  CHECK(s.next_wakeup() == t0 + seconds(4));
}

TEST_CASE("stop_after is the earliest over queries and bounds the wait") {
  Plan p = plan_with(10'000'000'000, 3'000'000'000);
  p.queries[1].stop_after_ns = 2'000'000'000;
  auto t0 = SteadyClock::time_point{} + seconds(100);
  Schedule s(p, t0);
  CHECK(s.next_wakeup() == t0 + seconds(2));
  CHECK(!s.should_stop(t0 + milliseconds(1999)));
  CHECK(s.should_stop(t0 + seconds(2)));
}

TEST_CASE("seconds covered: nominal for ticks, partial at the end, from the start if cumulative") {
  Plan p = plan_with(1'000'000'000, std::nullopt);
  auto t0 = SteadyClock::time_point{} + seconds(100);
  Schedule s(p, t0);
  auto& a = s.entries()[0];
  auto& b = s.entries()[1];
  CHECK(s.covered_seconds(a, t0 + milliseconds(1003), true) == doctest::Approx(1.0));
  a.last_print = t0 + seconds(1);
  CHECK(s.covered_seconds(a, t0 + milliseconds(1250), false) == doctest::Approx(0.25));
  CHECK(s.covered_seconds(b, t0 + milliseconds(1250), false) == doctest::Approx(1.25));
  CHECK(s.just_printed(a, t0 + seconds(1) + milliseconds(2)));
  CHECK(!s.just_printed(a, t0 + seconds(1) + milliseconds(200)));
  CHECK(!s.just_printed(b, t0));

  p.queries[0].cumulative = true;
  Schedule c(p, t0);
  CHECK(c.covered_seconds(c.entries()[0], t0 + seconds(3), true) == doctest::Approx(3.0));
}

TEST_CASE("a stream with a limit has an entry: its windows end on its ticks, or once at exit") {
  Plan p = plan_with(std::nullopt, std::nullopt);
  p.queries[2].limit = 2;
  p.queries[2].interval_ns = 500'000'000;
  PlanQuery whole_run;
  whole_run.name = "w";
  whole_run.streaming = true;
  whole_run.limit = 5;
  p.queries.push_back(whole_run);
  auto t0 = SteadyClock::time_point{} + seconds(100);
  Schedule s(p, t0);
  REQUIRE(s.entries().size() == 4);
  CHECK(s.entries()[2].query->name == "s");
  CHECK(s.entries()[3].query->name == "w");
  CHECK(s.next_wakeup() == t0 + milliseconds(500));
  auto due = s.take_due(t0 + milliseconds(500));
  REQUIRE(due.size() == 1);
  CHECK(due[0]->query->name == "s");
}

TEST_CASE("epoll timeouts round up so the loop never spins before a deadline") {
  auto now = SteadyClock::time_point{} + seconds(5);
  CHECK(Schedule::timeout_ms(std::nullopt, now) == -1);
  CHECK(Schedule::timeout_ms(now, now) == 0);
  CHECK(Schedule::timeout_ms(now + std::chrono::microseconds(100), now) == 1);
  CHECK(Schedule::timeout_ms(now + milliseconds(1500), now) == 1500);
}
