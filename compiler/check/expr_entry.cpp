// `entry.EXPR` (expr_checker.h): typed against the entry probes of the return probes the
// expression runs on; what is stored is collected later (entry_values.h).
#include <fmt/format.h>

#include <algorithm>

#include "compiler/check/entry_values.h"
#include "compiler/check/expr_checker.h"
#include "compiler/syntax/ast_walk.h"

namespace bpfql::expr_check {

Result<void> ExprChecker::visit(Expr& e, EntryValue& v, int depth) {
  auto not_return = std::ranges::find_if(probes_, [](const ProbeRef& p) { return !p.is_return(); });
  if (not_return != probes_.end())
    return error_at(e.loc, fmt::format("'{}': 'entry.' names a value of the function's entry, read "
                                       "back at its return, so it exists only at a return probe "
                                       "(uretprobe, kretprobe); '{}' is not one{}",
                                       e.text, not_return->spec,
                                       not_return->kind == ProbeKind::Uprobe ||
                                               not_return->kind == ProbeKind::Kprobe
                                           ? fmt::format(" (here, read '{}' itself)", v.inner->text)
                                           : ""));
  if (v.inner->as<EntryValue>())
    return error_at(e.loc, fmt::format("'{}': an entry value is read at the entry itself, where "
                                       "there is no entry. of its own; write '{}'",
                                       e.text, v.inner->text));
  if (v.inner->text == "duration")
    return error_at(e.loc, fmt::format("'{}': the entry of a call has no duration; at the return, "
                                       "'ts - entry.ts' is the time the call took",
                                       e.text));
  std::vector<ProbeRef> entries;
  for (const ProbeRef& p : probes_) entries.push_back(entry_probe_of(p));
  ExprScope at_entry = scope_;
  at_entry.probes = &entries;
  at_entry.in_span_end = false;
  at_entry.span_open = false;
  at_entry.begin_scope = nullptr;
  ExprChecker inner(at_entry);
  if (auto r = inner.check(*v.inner, depth + 1); !r) return r;
  const Expr* probe = nullptr;
  for_each_node(*v.inner, [&](const Expr& n) {
    const auto* b = n.as<BuiltinRef>();
    if (!probe && b && b->which == Builtin::Probe) probe = &n;
  });
  if (probe)
    return error_at(probe->loc, fmt::format("'{}': 'probe' at the return names the same function "
                                            "as at its entry; read it there",
                                            e.text));
  const Type& t = v.inner->type;
  bool kept = t.is_integer() || t.is_bool();
  bool strings = false;
  for_each_node(*v.inner, [&](const Expr& n) { strings = strings || n.type.is_string(); });
  if (!kept || strings)
    return error_at(
        e.loc, fmt::format("'{}': an entry value is a number kept per call in flight "
                           "(entry.arg0, entry.ts, entry.pid), and '{}' {}; for a "
                           "string or a stack of the entry, make the entry probe a "
                           "span's begin and read begin.{} at the return",
                           e.text, v.inner->text, kept ? "reads a string" : "is a " + t.describe(),
                           v.inner->text));
  e.type = t;
  return {};
}

}  // namespace bpfql::expr_check
