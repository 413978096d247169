#include "compiler/check/span_unmatched.h"

#include <fmt/format.h>

#include "compiler/syntax/ast_walk.h"

namespace bpfql {

const Expr* begin_value_in(const Expr& e) {
  const Expr* found = nullptr;
  for_each_node(e, [&](const Expr& n) {
    const auto* b = n.as<BuiltinRef>();
    if (!found && (n.as<Capture>() || (b && b->which == Builtin::Duration))) found = &n;
  });
  return found;
}

namespace {

// An error at a begin value `what` uses, saying why it cannot be kept honest, with a note at
// `unmatched: keep`.
std::unexpected<Diagnostic> refused(const Expr& value, const std::string& what,
                                    const std::string& why, const SpanSpec& spec) {
  Diagnostic d{value.loc,
               fmt::format("'{}' in {}: an end kept by `unmatched: keep` may have no begin, and "
                           "then has no duration and no begin values; {}",
                           value.text, what, why)};
  if (spec.unmatched_loc)
    d.notes.push_back({*spec.unmatched_loc, "unmatched: keep (RIGHT JOIN in SQL) is set here"});
  return std::unexpected(std::move(d));
}

const char* kFilterWhy =
    "this condition could not be decided for it; filter on the end's own values, or at the begin "
    "(begin_where), or drop `unmatched: keep`";

Result<void> check_filters(const std::vector<ExprPtr>& filters, const SpanSpec& spec) {
  for (const auto& f : filters)
    if (const Expr* v = begin_value_in(*f))
      return refused(*v, fmt::format("where '{}'", f->text), kFilterWhy, spec);
  return {};
}

}  // namespace

Result<void> check_unmatched(const SpanSpec& spec, CheckedQuery& q) {
  if (!spec.keep_unmatched) return {};
  if (spec.report_open)
    return error_at(spec.unmatched_loc.value_or(spec.loc),
                    "'unmatched: keep' records ends, and 'report: open' lists the spans still open, "
                    "not ends: use one of them");
  if (auto r = check_filters(q.filters, spec); !r) return r;
  for (const auto& rule : q.span->rules)
    if (rule.filters)
      if (auto r = check_filters(*rule.filters, spec); !r) return r;
  for (const auto& agg : q.aggregates)
    if (const Expr* v = agg.arg ? begin_value_in(*agg.arg) : nullptr)
      return refused(*v, fmt::format("the aggregate '{}'", agg.name),
                     "skipping such ends would make it cover fewer events than count() counts "
                     "for the same row; select the values without aggregates (a stream prints "
                     "them as empty where there was no begin), or drop `unmatched: keep`",
                     spec);
  for (const auto& key : q.keys)
    if (const Expr* v = begin_value_in(*key.expr))
      return refused(*v, fmt::format("the group_by key '{}'", key.name),
                     "such ends would have no key to be counted under; select the values without "
                     "aggregates (a stream prints them as empty where there was no begin), or drop "
                     "`unmatched: keep`",
                     spec);
  // An end that does not filter on --pid finds only the spans its filtered begin stored; one
  // without a begin cannot say whose it is.
  if (q.pid >= 0 && !q.pid_at_end) {
    q.notes.push_back(Diagnostic{
        spec.unmatched_loc.value_or(spec.loc),
        "unmatched: keep records no end without a begin in this run: the span's end does not "
        "filter on the traced process (see Task context), and without its begin nothing says "
        "whose the end is"});
    return {};
  }
  q.span->keep_unmatched = true;
  return {};
}

}  // namespace bpfql
