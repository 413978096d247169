#include "compiler/check/entry_values.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/syntax/ast_walk.h"

namespace bpfql {

ProbeRef entry_probe_of(const ProbeRef& ret) {
  ProbeRef entry = ret;
  entry.kind = ret.kind == ProbeKind::Kretprobe ? ProbeKind::Kprobe : ProbeKind::Uprobe;
  const std::string from = ret.kind == ProbeKind::Kretprobe ? "kretprobe:" : "uretprobe:";
  const std::string to = ret.kind == ProbeKind::Kretprobe ? "kprobe:" : "uprobe:";
  if (entry.spec.starts_with(from)) entry.spec = to + entry.spec.substr(from.size());
  return entry;
}

bool reads_entry_value(const Expr& e) {
  bool reads = false;
  for_each_node(e, [&](const Expr& n) { reads = reads || n.as<EntryValue>(); });
  return reads;
}

namespace {

// The expressions a query evaluates at its end probes and at its begin probes (captures run at
// the begin).
std::vector<const Expr*> end_side(const CheckedQuery& q) {
  std::vector<const Expr*> out;
  for (const auto& f : q.filters) out.push_back(f.get());
  for (const auto& k : q.keys) out.push_back(k.expr.get());
  for (const auto& a : q.aggregates)
    if (a.arg) out.push_back(a.arg.get());
  for (const auto& s : q.stream) out.push_back(s.expr.get());
  if (q.span) {
    for (size_t k = 0; k < q.probes.size(); ++k) {
      for (const auto& e : q.span->end_key_at(k)) out.push_back(e.get());
      if (const auto* own = q.span->end_filters_at(k))
        for (const auto& f : *own) out.push_back(f.get());
    }
  }
  return out;
}

std::vector<const Expr*> begin_side(const CheckedQuery& q) {
  std::vector<const Expr*> out;
  if (!q.span) return out;
  for (size_t k = 0; k < q.span->begin.size(); ++k) {
    for (const auto& e : q.span->begin_key_at(k)) out.push_back(e.get());
    for (const auto& f : q.span->begin_filters_at(k)) out.push_back(f.get());
  }
  for (const auto& c : q.span->captures) out.push_back(c.get());
  return out;
}

const Expr* first_entry_value(const std::vector<const Expr*>& roots) {
  const Expr* found = nullptr;
  for (const Expr* root : roots)
    for_each_node(*root, [&](const Expr& n) {
      if (!found && n.as<EntryValue>()) found = &n;
    });
  return found;
}

}  // namespace

Result<void> collect_entry_values(CheckedQuery& q) {
  std::vector<const Expr*> all = end_side(q);
  std::vector<const Expr*> begin = begin_side(q);
  all.insert(all.end(), begin.begin(), begin.end());
  std::vector<const Expr*> uses;  // every `entry.EXPR` node, in order
  for (const Expr* root : all)
    for_each_node(*root, [&](const Expr& n) {
      if (n.as<EntryValue>()) uses.push_back(&n);
    });
  for (const Expr* n : uses) {
    const Expr& inner = *n->as<EntryValue>()->inner;
    if (std::ranges::any_of(q.entry_values,
                            [&](const ExprPtr& v) { return v->text == inner.text; }))
      continue;
    if (q.entry_values.size() == kMaxEntryValues)
      return error_at(n->loc, fmt::format("'{}': a query keeps at most {} distinct entry values "
                                          "per call in flight",
                                          n->text, kMaxEntryValues));
    q.entry_values.push_back(clone_expr(inner));
  }
  if (!q.span || q.entry_values.empty()) return {};
  const Expr* at_end = first_entry_value(end_side(q));
  const Expr* at_begin = first_entry_value(begin_side(q));
  for (const ProbeRef& end : q.probes)
    for (const ProbeRef& b : q.span->begin)
      if (end.spec == b.spec && end.is_return() && (at_end || at_begin))
        return error_at((at_end ? at_end : at_begin)->loc,
                        fmt::format("'{}': '{}' both ends and begins the span, and each part "
                                    "would claim the call's one entry record; read the entry "
                                    "value at one side only, through a probe of its own",
                                    (at_end ? at_end : at_begin)->text, end.spec));
  return {};
}

}  // namespace bpfql
