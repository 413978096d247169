#include "compiler/check/histogram_sums.h"

namespace bpfql {
namespace {

// ASCII record separator: the loader refuses control characters in query files, so no alias or
// item text can start with it.
constexpr std::string_view kPrefix = "\x1e" "sum:";

}  // namespace

std::string histogram_sum_column(std::string_view histogram) {
  return std::string(kPrefix) + std::string(histogram);
}

bool is_histogram_sum_column(std::string_view column) { return column.starts_with(kPrefix); }

void add_histogram_sums(CheckedQuery& query) {
  std::vector<AggregateItem> sums;
  for (const AggregateItem& a : query.aggregates) {
    if (!is_histogram(a.kind) || !a.arg) continue;
    AggregateItem sum;
    sum.name = histogram_sum_column(a.name);
    sum.kind = AggKind::Sum;
    sum.arg = clone_expr(*a.arg);
    sum.loc = a.loc;
    sums.push_back(std::move(sum));
  }
  for (AggregateItem& sum : sums) {
    query.columns.push_back(sum.name);
    query.aggregates.push_back(std::move(sum));
  }
}

}  // namespace bpfql
