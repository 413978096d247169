// The hidden min()/max() next to each percentile() (compiler/check/percentile_bounds.h), which
// keep a percentile inside the range of the values seen.
#include "compiler/check/percentile_bounds.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "support/check_helpers.h"

namespace bpfql {
namespace {

using testing::check_yaml;

size_t count_kind(const CheckedQuery& q, AggKind kind, const std::string& arg) {
  return static_cast<size_t>(std::count_if(q.aggregates.begin(), q.aggregates.end(),
                                           [&](const AggregateItem& a) {
                                             return a.kind == kind && a.arg && a.arg->text == arg;
                                           }));
}

TEST_CASE("percentile() without min()/max(): both are added, hidden, once per expression") {
  auto program = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\n"
      "select: [comm, percentile(retval, 50) as p, percentile(retval, 99), count()]\n"
      "group_by: comm\n");
  REQUIRE(program.has_value());
  const CheckedQuery& q = program->queries.at(0);
  CHECK(count_kind(q, AggKind::Min, "retval") == 1);
  CHECK(count_kind(q, AggKind::Max, "retval") == 1);
  CHECK(q.columns == std::vector<std::string>{"comm", "p", "percentile(retval, 99)", "count()"});
  for (const auto& a : q.aggregates)
    if (a.kind == AggKind::Min || a.kind == AggKind::Max) {
      CHECK(is_percentile_bound(a.name));
      CHECK(std::find(q.columns.begin(), q.columns.end(), a.name) == q.columns.end());
      REQUIRE(a.arg);
      CHECK(a.arg->type.is_integer());
    }
}

TEST_CASE("percentile() next to the user's max(): only min() is added; other values get none") {
  auto program = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\n"
      "select: [percentile(retval, 50), max(retval) as high, sum(retval)]\n");
  REQUIRE(program.has_value());
  const CheckedQuery& q = program->queries.at(0);
  CHECK(count_kind(q, AggKind::Max, "retval") == 1);
  CHECK(count_kind(q, AggKind::Min, "retval") == 1);
  CHECK(q.aggregates.size() == 4);  // percentile, max, sum, the hidden min

  auto plain = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\n"
      "select: [hist(retval), count()]\n");
  REQUIRE(plain.has_value());
  CHECK(plain->queries.at(0).aggregates.size() == 2);  // no percentile: nothing added
}

}  // namespace
}  // namespace bpfql
