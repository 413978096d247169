#include "compiler/check/span_nest.h"

#include <fmt/format.h>

#include "compiler/check/span_check.h"
#include "compiler/check/span_unmatched.h"
#include "compiler/syntax/parser.h"

namespace bpfql {
namespace {

bool is_tid(const ExprPtr& k) {
  const auto* ref = k->as<BuiltinRef>();
  return ref && ref->which == Builtin::Tid;
}

// A nest is one thread's call stack: keyed by the thread, nothing else.
Result<void> check_nest_keys(const SourceLoc& nest_at, const CheckedQuery& q) {
  for (const auto* key : q.span->all_keys()) {
    if (key->size() == 1 && is_tid((*key)[0])) continue;
    const Expr& first = *(*key)[0];
    return error_at(nest_at, fmt::format("'nest: true' nests the spans of one thread like calls "
                                         "(a per-thread stack of begins), so its key is 'tid' "
                                         "(the default), not '{}'",
                                         key->size() == 1 ? first.text : "a composite key"));
  }
  return {};
}

// A begin that a condition rejected would store nothing, and its end would close the span
// around it: the stack would go out of step with the calls.
Result<void> check_no_begin_condition(const SpanSpec& spec, const CheckedQuery& q) {
  const char* why =
      "with 'nest: true' every begin opens a level, or the end of a begin left out "
      "would close the span around it; filter the rows with 'where' instead";
  if (!spec.begin_where.empty())
    return error_at(spec.begin_where.front().loc,
                    fmt::format("begin_where '{}': {}", spec.begin_where.front().text, why));
  for (const auto& rule : spec.begin_rules)
    if (rule.has_where && !rule.where.empty())
      return error_at(rule.where.front().loc,
                      fmt::format("the begin item's where '{}': {}", rule.where.front().text, why));
  (void)q;
  return {};
}

// The error of a select item or `where` that is not valid at the begin probes, saying why it is
// evaluated there.
std::unexpected<Diagnostic> at_begin_row(Diagnostic d, const SourceLoc& report_at) {
  d.message = "with 'report: flow' a begin row evaluates it at the begin probe: " + d.message;
  d.notes.push_back({report_at, "report: flow is set here"});
  return std::unexpected(std::move(d));
}

Result<ExprPtr> typed_at_begin(const Expr& end_typed, ExprRole role, const ExprScope& begin_scope,
                               const SourceLoc& report_at) {
  auto parsed = parse_expression(end_typed.text, end_typed.loc);
  if (!parsed) return std::unexpected(parsed.error());
  ExprScope scope = begin_scope;
  scope.role = role;
  if (auto r = check_expr(**parsed, scope); !r) return at_begin_row(r.error(), report_at);
  const Type& b = (*parsed)->type;
  const Type& e = end_typed.type;
  if (b.kind != e.kind || (b.is_bytes() && b.byte_len != e.byte_len))
    return error_at(end_typed.loc,
                    fmt::format("'{}' is a {} at the end probe and a {} at the begin probe; with "
                                "'report: flow' one column holds both",
                                end_typed.text, e.describe(), b.describe()));
  return std::move(*parsed);
}

Result<void> check_flow(const SourceLoc& report_at, const ExprScope& begin_scope, CheckedQuery& q) {
  if (!q.streaming())
    return error_at(report_at,
                    "a span with 'report: flow' streams a row for every begin and "
                    "every end: select plain values (tid, depth, flow(str(arg1))), "
                    "not aggregates or group_by");
  CheckedSpan& span = *q.span;
  for (const auto& f : q.filters) {
    if (const Expr* v = begin_value_in(*f))
      return error_at(v->loc, fmt::format("'{}' in where '{}': with 'report: flow' the filter "
                                          "also decides begin rows, which have no duration and "
                                          "no begin values yet",
                                          v->text, f->text));
    auto typed = typed_at_begin(*f, ExprRole::Filter, begin_scope, report_at);
    if (!typed) return std::unexpected(typed.error());
    span.flow_begin_filters.push_back(std::move(*typed));
  }
  for (const auto& item : q.stream) {
    if (begin_value_in(*item.expr)) {  // absent at a begin row, as for an unmatched end
      span.flow_begin_stream.push_back(nullptr);
      continue;
    }
    auto typed = typed_at_begin(*item.expr, ExprRole::Value, begin_scope, report_at);
    if (!typed) return std::unexpected(typed.error());
    span.flow_begin_stream.push_back(std::move(*typed));
  }
  span.report_flow = true;
  return {};
}

}  // namespace

Result<void> check_nest(const SpanSpec& spec, const ExprScope& begin_scope, CheckedQuery& q) {
  if (!spec.nest) {
    if (spec.report_flow)
      return error_at(*spec.report_flow,
                      "'report: flow' prints each begin and end at its call "
                      "depth, which only a span with 'nest: true' keeps: add "
                      "'nest: true'");
    return {};
  }
  if (auto r = check_nest_keys(*spec.nest, q); !r) return r;
  if (auto r = check_no_begin_condition(spec, q); !r) return r;
  if (spec.report_open)
    return error_at(*spec.report_open,
                    "'report: open' walks a hash of open spans at each print, "
                    "and 'nest: true' keeps them in each thread's own storage, "
                    "which cannot be walked: use one of them");
  q.span->nest = true;
  if (spec.report_flow) return check_flow(*spec.report_flow, begin_scope, q);
  return {};
}

}  // namespace bpfql
