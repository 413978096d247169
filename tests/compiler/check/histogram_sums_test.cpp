// serve's hidden sums next to histograms (compiler/check/histogram_sums.h) and the expression copy
// they are made with.
#include "compiler/check/histogram_sums.h"

#include <doctest/doctest.h>

#include "support/check_helpers.h"

namespace bpfql {
namespace {

using testing::check_yaml;

TEST_CASE("add_histogram_sums: one hidden sum(E) per hist, lhist and percentile, after the rest") {
  auto program = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\n"
      "select: [count(), hist(retval) as size, lhist(retval * 2, 0, 100, 10), "
      "percentile(retval, 50), max(retval)]\n"
      "group_by: comm\n");
  REQUIRE(program.has_value());
  CheckedQuery& q = program->queries.at(0);
  size_t aggregates = q.aggregates.size();
  std::vector<std::string> columns = q.columns;
  add_histogram_sums(q);
  REQUIRE(q.aggregates.size() == aggregates + 3);
  REQUIRE(q.columns.size() == columns.size() + 3);
  CHECK(q.columns[columns.size()] == histogram_sum_column("size"));
  CHECK(q.columns[columns.size() + 1] == histogram_sum_column("lhist(retval * 2, 0, 100, 10)"));
  CHECK(q.columns[columns.size() + 2] == histogram_sum_column("percentile(retval, 50)"));
  for (size_t i = aggregates; i < q.aggregates.size(); ++i) {
    CHECK(q.aggregates[i].kind == AggKind::Sum);
    CHECK(is_histogram_sum_column(q.aggregates[i].name));
    REQUIRE(q.aggregates[i].arg);
    CHECK(q.aggregates[i].arg->type.is_integer());
  }
  // A deep copy: the user's expression is untouched and the copy stands alone.
  const Expr& copied = *q.aggregates[aggregates + 1].arg;
  CHECK(copied.text == "retval * 2");
  const auto* product = copied.as<Binary>();
  REQUIRE(product);
  CHECK(product->op == BinaryOp::Mul);
  CHECK(product->lhs.get() != q.aggregates[2].arg->as<Binary>()->lhs.get());
  CHECK_FALSE(is_histogram_sum_column("size"));
}

TEST_CASE("add_histogram_sums leaves a query without histograms alone") {
  auto program = check_yaml("probe: tracepoint:syscalls:sys_exit_read\nselect: [count(), sum(retval)]\n");
  REQUIRE(program.has_value());
  CheckedQuery& q = program->queries.at(0);
  add_histogram_sums(q);
  CHECK(q.aggregates.size() == 2);
  CHECK(q.columns.size() == 2);
}

}  // namespace
}  // namespace bpfql
