#include "compiler/check/span_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/check/probe.h"
#include "compiler/syntax/parser.h"

namespace bpfql {
namespace {

// One side of a span key: each expression an integer, typed at that side's probes.
Result<void> check_span_key(const std::vector<Located>& texts, const SourceLoc& default_loc,
                            const ExprScope& scope, std::vector<ExprPtr>& out) {
  std::vector<Located> exprs = texts;
  if (exprs.empty()) exprs.push_back(Located{"tid", default_loc});
  if (exprs.size() > 8)
    return error_at(default_loc, fmt::format("a composite span key has at most 8 expressions, "
                                             "not {}",
                                             exprs.size()));
  for (const Located& text : exprs) {
    auto expr = parse_expression(text.text, text.loc);
    if (!expr) return std::unexpected(expr.error());
    if (auto r = check_expr(**expr, scope); !r) return r;
    if (!(*expr)->type.is_integer())
      return error_at((*expr)->loc, fmt::format("a span key must be an integer (such as tid or "
                                                "args.fd), but '{}' is a {}",
                                                (*expr)->text, (*expr)->type.describe()));
    out.push_back(std::move(*expr));
  }
  return {};
}

std::vector<ExprPtr> clones(const std::vector<ExprPtr>& exprs) {
  std::vector<ExprPtr> out;
  for (const auto& e : exprs) out.push_back(clone_expr(*e));
  return out;
}

// One side's probes, and for each the index in CheckedSpan::rules of the item it came from
// (-1: a plain probe spec). A wildcard item resolves to several probes, all of its rule.
struct Side {
  std::vector<ProbeRef> probes;
  std::vector<int> rule;
};

Result<Side> resolve_side(const std::vector<Located>& specs,
                          const std::vector<SpanProbeRule>& rules, int first_rule,
                          const KernelCatalog& catalog, const ExprScope& scope) {
  auto all = resolve_probes(specs, catalog, scope.params);  // every error, duplicates included
  if (!all) return std::unexpected(all.error());
  Side side{std::move(*all), {}};
  for (size_t i = 0; i < specs.size(); ++i) {
    size_t count = 1;
    if (!rules.empty()) {
      auto one = resolve_probes({specs[i]}, catalog, scope.params);
      if (!one) return std::unexpected(one.error());
      count = one->size();
    }
    auto rule = std::ranges::find(rules, i, &SpanProbeRule::index);
    int at = rule == rules.end() ? -1 : first_rule + static_cast<int>(rule - rules.begin());
    side.rule.insert(side.rule.end(), count, at);
  }
  return side;
}

// The probes of a side whose rule is `rule` (-1: those that take the shared key or filter,
// through `shared`).
std::vector<ProbeRef> probes_of(const Side& side, int rule,
                                const std::function<bool(int)>& shared = nullptr) {
  std::vector<ProbeRef> out;
  for (size_t k = 0; k < side.probes.size(); ++k)
    if (rule >= 0 ? side.rule[k] == rule : shared(side.rule[k])) out.push_back(side.probes[k]);
  return out;
}

// A side's keys: each rule's own (typed at its probes), and the shared one at the probes that
// take it (when none does, the first rule's stands for it, for the span's shape).
Result<void> check_side_keys(const std::vector<Located>& shared, const SourceLoc& shared_loc,
                             const std::vector<SpanProbeRule>& rules, int first_rule,
                             const Side& side, ExprScope scope, CheckedSpan& span,
                             std::vector<ExprPtr>& shared_out) {
  scope.role = ExprRole::SpanKey;
  scope.in_span_end = false;
  for (size_t j = 0; j < rules.size(); ++j) {
    if (rules[j].key.empty()) continue;
    int at = first_rule + static_cast<int>(j);
    std::vector<ProbeRef> probes = probes_of(side, at);
    scope.probes = &probes;
    std::vector<ExprPtr> key;
    if (auto r = check_span_key(rules[j].key, *rules[j].key_loc, scope, key); !r) return r;
    span.rules[static_cast<size_t>(at)].key = std::move(key);
  }
  std::vector<ProbeRef> sharing = probes_of(
      side, -1, [&](int rule) { return rule < 0 || !span.rules[static_cast<size_t>(rule)].key; });
  if (sharing.empty()) {
    for (const SpanProbeRule& rule : rules)
      if (!rule.key.empty()) {
        shared_out = clones(
            *span.rules[static_cast<size_t>(first_rule) + static_cast<size_t>(&rule - rules.data())]
                 .key);
        return {};
      }
  }
  scope.probes = &sharing;
  return check_span_key(shared, shared_loc, scope, shared_out);
}

// Keys are stored as 64 bits each: a signed value narrower than that is sign-extended, an
// unsigned one is not, so the two meet for the same value only when their signedness agrees
// (or both are 64 bits wide).
bool keys_meet(const Type& a, const Type& b) {
  return a.is_signed == b.is_signed || (a.bits == 64 && b.bits == 64);
}

Result<void> check_keys_pair(const std::vector<ExprPtr>& end_key,
                             const std::vector<ExprPtr>& begin_key, const SourceLoc& begin_loc) {
  if (begin_key.size() != end_key.size())
    return error_at(
        begin_loc, fmt::format("this begin key has {} expression{} and the end key {}; a "
                               "composite key pairs them one to one",
                               begin_key.size(), begin_key.size() == 1 ? "" : "s", end_key.size()));
  for (size_t i = 0; i < begin_key.size(); ++i) {
    const Expr& b = *begin_key[i];
    const Expr& e = *end_key[i];
    if (!keys_meet(b.type, e.type))
      return error_at(b.loc, fmt::format("the begin key '{}' ({}) and the end key '{}' ({}) "
                                         "cannot meet: keys are compared as 64-bit values, and a "
                                         "signed key narrower than that is sign-extended where "
                                         "an unsigned one is not; give both sides the same type",
                                         b.text, b.type.describe(), e.text, e.type.describe()));
  }
  return {};
}

// Every begin key the span uses against every end key it uses.
Result<void> check_keys_meet(const CheckedSpan& span, const SpanSpec& spec, size_t end_probes) {
  SourceLoc key_loc = spec.key_loc.value_or(spec.loc);
  std::vector<const std::vector<ExprPtr>*> ends;
  for (size_t k = 0; k < end_probes; ++k) ends.push_back(&span.end_key_at(k));
  for (size_t k = 0; k < span.begin.size(); ++k) {
    int rule = span.begin_rule[k];
    SourceLoc loc = rule >= 0 && spec.begin_rules[static_cast<size_t>(rule)].key_loc
                        ? *spec.begin_rules[static_cast<size_t>(rule)].key_loc
                        : key_loc;
    for (const auto* end : ends)
      if (auto r = check_keys_pair(*end, span.begin_key_at(k), loc); !r) return r;
  }
  return {};
}

}  // namespace

Result<void> check_span(const SpanSpec& spec, const KernelCatalog& catalog, ExprScope scope,
                        CheckedQuery& out) {
  int end_first = static_cast<int>(spec.begin_rules.size());
  auto begin = resolve_side(spec.begin, spec.begin_rules, 0, catalog, scope);
  if (!begin) return std::unexpected(begin.error());
  auto end = resolve_side(spec.end, spec.end_rules, end_first, catalog, scope);
  if (!end) return std::unexpected(end.error());
  CheckedSpan span;
  span.rules.resize(spec.begin_rules.size() + spec.end_rules.size());
  span.begin = begin->probes;
  span.begin_rule = begin->rule;
  span.end_rule = end->rule;
  out.probes = end->probes;

  SourceLoc key_loc = spec.key_loc.value_or(spec.loc);
  if (auto r = check_side_keys(spec.begin_key, key_loc, spec.begin_rules, 0, *begin, scope, span,
                               span.begin_key);
      !r)
    return r;
  if (auto r = check_side_keys(spec.end_key, key_loc, spec.end_rules, end_first, *end, scope, span,
                               span.end_key);
      !r)
    return r;
  if (auto r = check_keys_meet(span, spec, out.probes.size()); !r) return r;

  // At the begin: each rule's own conditions, and begin_where at the probes without them.
  ExprScope begin_scope = scope;
  begin_scope.in_span_end = false;
  for (size_t j = 0; j < spec.begin_rules.size(); ++j) {
    if (!spec.begin_rules[j].has_where) continue;
    std::vector<ProbeRef> probes = probes_of(*begin, static_cast<int>(j));
    begin_scope.probes = &probes;
    std::vector<ExprPtr> filters;
    if (auto r = check_conditions(spec.begin_rules[j].where, begin_scope, filters); !r) return r;
    span.rules[j].filters = std::move(filters);
  }
  std::vector<ProbeRef> sharing = probes_of(*begin, -1, [&](int rule) {
    return rule < 0 || !span.rules[static_cast<size_t>(rule)].filters;
  });
  if (sharing.empty() && !spec.begin_where.empty())
    return error_at(spec.begin_where.front().loc,
                    "begin_where applies to no probe: every begin probe has its own 'where'");
  begin_scope.probes = &sharing;
  if (auto r = check_conditions(spec.begin_where, begin_scope, span.begin_filters); !r) return r;
  out.span = std::move(span);
  return {};
}

Result<void> check_span_end_rules(const SpanSpec& spec, const ExprScope& scope, CheckedQuery& out) {
  Side end{out.probes, out.span->end_rule};
  int first = static_cast<int>(spec.begin_rules.size());
  for (size_t j = 0; j < spec.end_rules.size(); ++j) {
    if (!spec.end_rules[j].has_where) continue;
    std::vector<ProbeRef> probes = probes_of(end, first + static_cast<int>(j));
    ExprScope at = scope;
    at.probes = &probes;
    std::vector<ExprPtr> filters;
    if (auto r = check_conditions(spec.end_rules[j].where, at, filters); !r) return r;
    out.span->rules[static_cast<size_t>(first) + j].filters = std::move(filters);
  }
  return {};
}

}  // namespace bpfql
