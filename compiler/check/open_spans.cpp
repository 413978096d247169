#include "compiler/check/open_spans.h"

#include <fmt/format.h>

#include "compiler/syntax/ast_walk.h"

namespace bpfql {
namespace {

bool is_age(const Expr& e) {
  const auto* b = e.as<BuiltinRef>();
  return b && b->which == Builtin::Age;
}

// One key (or aggregate argument, which may also be `age`) of an open-span row.
Result<void> check_read_off_span(const Expr& e, bool aggregated) {
  if (e.as<Capture>() || (aggregated && is_age(e))) return {};
  bool captures = false;
  for_each_node(e, [&](const Expr& n) { captures = captures || n.as<Capture>(); });
  const char* what = aggregated ? "an aggregated value" : "a group_by key";
  if (captures)
    return error_at(e.loc, fmt::format("'{}': with 'report: open', {} is read off each open span "
                                       "at the print, so it is one capture itself (begin.EXPR{}); "
                                       "an expression over captures is not computed there",
                                       e.text, what, aggregated ? " or age" : ""));
  // One value the end reads (comm, arg0, args.fd): the begin may capture it instead.
  bool one_value = e.as<BuiltinRef>() || e.as<FieldRef>();
  return error_at(e.loc, fmt::format("'{}' is read at the end probe, but with 'report: open' the "
                                     "rows are spans that have not ended: {} is what the begin "
                                     "captured (begin.EXPR{}){}",
                                     e.text, what, aggregated ? " or age" : "",
                                     one_value ? fmt::format("; did you mean 'begin.{}'?", e.text)
                                               : std::string()));
}

}  // namespace

Result<void> check_open_report(const SourceLoc& report_at, const CheckedQuery& q) {
  if (q.streaming())
    return error_at(report_at, "a span with 'report: open' aggregates the spans still open at "
                               "each print: select aggregates over its captures (count(), "
                               "max(age) as oldest, group_by: begin.ustack), not one row per "
                               "event");
  for (const auto& k : q.keys)
    if (auto r = check_read_off_span(*k.expr, false); !r) return r;
  for (const auto& a : q.aggregates)
    if (a.arg)
      if (auto r = check_read_off_span(*a.arg, true); !r) return r;
  return {};
}

}  // namespace bpfql
