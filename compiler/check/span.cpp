#include "compiler/check/span.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "compiler/syntax/ast_walk.h"

namespace bpfql {

bool is_begin_time(const Expr& inner) {
  const auto* b = inner.as<BuiltinRef>();
  return b && b->which == Builtin::Ts;
}

int CheckedSpan::capture_slot(const Expr& inner) const {
  if (is_begin_time(inner)) return -1;
  for (size_t i = 0; i < captures.size(); ++i)
    if (captures[i]->text == inner.text) return static_cast<int>(i);
  return -1;
}

namespace {
const CheckedSpanRule* rule_at(const CheckedSpan& span, const std::vector<int>& of, size_t k) {
  return k < of.size() && of[k] >= 0 ? &span.rules[static_cast<size_t>(of[k])] : nullptr;
}
}  // namespace

const std::vector<ExprPtr>& CheckedSpan::begin_key_at(size_t k) const {
  const CheckedSpanRule* rule = rule_at(*this, begin_rule, k);
  return rule && rule->key ? *rule->key : begin_key;
}

const std::vector<ExprPtr>& CheckedSpan::begin_filters_at(size_t k) const {
  const CheckedSpanRule* rule = rule_at(*this, begin_rule, k);
  return rule && rule->filters ? *rule->filters : begin_filters;
}

const std::vector<ExprPtr>& CheckedSpan::end_key_at(size_t k) const {
  const CheckedSpanRule* rule = rule_at(*this, end_rule, k);
  return rule && rule->key ? *rule->key : end_key;
}

const std::vector<ExprPtr>* CheckedSpan::end_filters_at(size_t k) const {
  const CheckedSpanRule* rule = rule_at(*this, end_rule, k);
  return rule && rule->filters ? &*rule->filters : nullptr;
}

std::vector<const std::vector<ExprPtr>*> CheckedSpan::all_keys() const {
  std::vector<const std::vector<ExprPtr>*> keys = {&begin_key, &end_key};
  for (const auto& rule : rules)
    if (rule.key) keys.push_back(&*rule.key);
  return keys;
}

Result<void> check_span_captures(const CheckedQuery& q) {
  if (!q.streaming()) return {};
  for (const auto& item : q.stream) {
    const Expr* stack = nullptr;
    for_each_node(*item.expr, [&](const Expr& e) {
      if (e.as<Capture>() && e.type.kind == TypeKind::Stack && !stack) stack = &e;
    });
    if (stack)
      return error_at(stack->loc,
                      fmt::format("'{}': a stack captured at the begin is kept as a stack id, "
                                  "which a streamed event cannot carry; group by it instead "
                                  "(select: count(), group_by: {})",
                                  stack->text, stack->text));
  }
  return {};
}

const ForeignContext* foreign_context(const ProbeRef& probe) {
  static const std::map<std::string, ForeignContext> kByTracepoint = {
      {"sched:sched_wakeup", {"the waker (the task that wakes the other up)", "args.pid"}},
      {"sched:sched_wakeup_new", {"the parent that forked the new task", "args.pid"}},
      {"sched:sched_waking", {"the waker (the task that wakes the other up)", "args.pid"}},
      {"sched:sched_switch",
       {"the task switched out (prev); the task switched in is args.next_pid", "args.prev_pid"}},
      {"sched:sched_process_fork", {"the parent", "args.child_pid"}},
      {"sched:sched_migrate_task", {"whatever task migrates it", "args.pid"}},
      {"signal:signal_generate", {"the sender", "args.pid"}},
      {"block:block_rq_complete",
       {"whatever task the completion interrupt lands in", "args.dev and args.sector"}},
      {"block:block_rq_issue",
       {"the submitter or a kworker, often not the task that asked", "args.dev and args.sector"}},
      {"block:block_bio_complete",
       {"whatever task the completion interrupt lands in", "args.dev and args.sector"}},
      {"sock:inet_sock_set_state",
       {"softirq for incoming packets, in whatever task is interrupted", "args.skaddr"}},
  };
  static const std::map<std::string, ForeignContext> kByCategory = {
      {"irq", {"interrupt context, in whatever task is interrupted", "a field of the event"}},
      {"timer", {"timer interrupt context", "a field of the event"}},
      {"workqueue", {"a kworker thread", "a field of the event"}},
  };
  if (probe.kind != ProbeKind::Tracepoint || !probe.format) return nullptr;
  auto it = kByTracepoint.find(probe.format->category + ":" + probe.format->name);
  if (it != kByTracepoint.end()) return &it->second;
  auto cat = kByCategory.find(probe.format->category);
  return cat == kByCategory.end() ? nullptr : &cat->second;
}

namespace {

// The first builtin of the current task (pid, tid, comm, uid, ...) a key reads, or null.
const Expr* task_builtin(const std::vector<ExprPtr>& key) {
  const Expr* found = nullptr;
  for (const auto& k : key)
    for_each_node(*k, [&](const Expr& e) {
      const auto* b = e.as<BuiltinRef>();
      if (!found && b &&
          (b->which == Builtin::Pid || b->which == Builtin::Tid || b->which == Builtin::Comm ||
           b->which == Builtin::Ppid || b->which == Builtin::Uid || b->which == Builtin::Gid ||
           b->which == Builtin::Cgroup))
        found = &e;
    });
  return found;
}

bool same_probes(const std::vector<ProbeRef>& a, const std::vector<ProbeRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].spec != b[i].spec) return false;
  return true;
}

void warn_side(CheckedQuery& q, const std::vector<ProbeRef>& probes,
               const std::vector<ExprPtr>& key, const char* side) {
  const Expr* builtin = task_builtin(key);
  if (!builtin) return;
  for (const ProbeRef& probe : probes)
    if (const ForeignContext* where = foreign_context(probe)) {
      q.warnings.push_back(Diagnostic{
          builtin->loc,
          fmt::format("the span's {} key '{}' reads the current task, but '{}' runs in {}: the "
                      "key names another task than the event is about (key this side by {})",
                      side, builtin->text, probe.spec, where->runs_in, where->instead)});
      return;
    }
}

}  // namespace

// Each key of a side with the probes that use it.
void warn_keys(CheckedQuery& q, const std::vector<ProbeRef>& probes, bool begin) {
  std::vector<std::pair<const std::vector<ExprPtr>*, std::vector<ProbeRef>>> by_key;
  for (size_t k = 0; k < probes.size(); ++k) {
    const auto* key = begin ? &q.span->begin_key_at(k) : &q.span->end_key_at(k);
    auto it = std::ranges::find(by_key, key, &decltype(by_key)::value_type::first);
    if (it == by_key.end()) it = by_key.insert(by_key.end(), {key, {}});
    it->second.push_back(probes[k]);
  }
  for (const auto& [key, with] : by_key) warn_side(q, with, *key, begin ? "begin" : "end");
}

void warn_task_context(CheckedQuery& q) {
  if (!q.span || same_probes(q.span->begin, q.probes)) return;
  std::vector<ProbeRef> begin = q.span->begin, end = q.probes;
  warn_keys(q, begin, true);
  warn_keys(q, end, false);
}

}  // namespace bpfql
