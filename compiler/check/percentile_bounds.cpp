#include "compiler/check/percentile_bounds.h"

#include <algorithm>

namespace bpfql {
namespace {

// ASCII record separator, as the hidden sums (histogram_sums.cpp): no query text holds it.
constexpr std::string_view kPrefix = "\x1e" "bound:";

bool has_aggregate(const CheckedQuery& q, AggKind kind, std::string_view text) {
  return std::any_of(q.aggregates.begin(), q.aggregates.end(), [&](const AggregateItem& a) {
    return a.kind == kind && a.arg && a.arg->text == text;
  });
}

}  // namespace

std::string percentile_bound_name(AggKind kind, std::string_view expr_text) {
  return std::string(kPrefix) + (kind == AggKind::Min ? "min(" : "max(") + std::string(expr_text) +
         ")";
}

bool is_percentile_bound(std::string_view aggregate_name) {
  return aggregate_name.starts_with(kPrefix);
}

void add_percentile_bounds(CheckedQuery& query) {
  std::vector<AggregateItem> bounds;
  for (const AggregateItem& a : query.aggregates) {
    if (a.kind != AggKind::Percentile || !a.arg) continue;
    for (AggKind kind : {AggKind::Min, AggKind::Max}) {
      if (has_aggregate(query, kind, a.arg->text)) continue;
      bool added = std::any_of(bounds.begin(), bounds.end(), [&](const AggregateItem& b) {
        return b.kind == kind && b.arg->text == a.arg->text;
      });
      if (added) continue;
      AggregateItem bound;
      bound.name = percentile_bound_name(kind, a.arg->text);
      bound.kind = kind;
      bound.arg = clone_expr(*a.arg);
      bound.loc = a.loc;
      bound.unit = a.unit;
      bounds.push_back(std::move(bound));
    }
  }
  for (AggregateItem& b : bounds) query.aggregates.push_back(std::move(b));
}

}  // namespace bpfql
