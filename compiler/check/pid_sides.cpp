#include "compiler/check/pid_sides.h"

#include <fmt/format.h>

#include "compiler/check/span.h"

namespace bpfql {
namespace {

bool is_task_builtin(const Expr& e) {
  const auto* b = e.as<BuiltinRef>();
  return b && (b->which == Builtin::Pid || b->which == Builtin::Tid);
}

bool is_field(const Expr& e, const char* name) {
  const auto* f = e.as<FieldRef>();
  return f && f->name == name;
}

// Whether `probe`, keyed by `key` on its side, runs in the task the key names.
bool runs_in_keyed_task(const ProbeRef& probe, const std::vector<ExprPtr>& key) {
  if (!foreign_context(probe)) return true;
  if (key.size() != 1) return false;
  if (is_task_builtin(*key[0])) return true;  // the key is the current task, wherever it runs
  // sched_switch runs in the task switched out: prev_pid is the current task.
  return probe.format && probe.format->category == "sched" && probe.format->name == "sched_switch" &&
         is_field(*key[0], "prev_pid");
}

// Whether a key expression names a task: pid/tid, or a field called pid, tid or *_pid / *_tid
// (a tracepoint's `pid`, `next_pid`, `prev_pid`, `child_pid`...).
bool names_task(const Expr& e) {
  if (is_task_builtin(e)) return true;
  const auto* f = e.as<FieldRef>();
  if (!f) return false;
  auto ends_with = [&](const char* tail) {
    std::string t(tail);
    return f->name.size() >= t.size() && f->name.compare(f->name.size() - t.size(), t.size(), t) == 0;
  };
  return f->name == "pid" || f->name == "tid" || ends_with("_pid") || ends_with("_tid");
}

bool key_names_task(const std::vector<ExprPtr>& key) {
  for (const auto& k : key)
    if (names_task(*k)) return true;
  return false;
}

bool side_runs_in_keyed_task(const std::vector<ProbeRef>& probes, const std::vector<ExprPtr>& key) {
  for (const ProbeRef& p : probes)
    if (!runs_in_keyed_task(p, key)) return false;
  return true;
}

// Entry and exit of one interrupt, softirq, timer or work item run back to back in the task
// they interrupt (or the kworker): filtering both on it is consistent, "those that hit N".
bool one_context(const CheckedQuery& q) {
  auto category = [](const ProbeRef& p) { return p.format ? p.format->category : std::string(); };
  std::string first = category(q.span->begin.front());
  if (first != "irq" && first != "timer" && first != "workqueue") return false;
  for (const auto* side : {&q.span->begin, &q.probes})
    for (const ProbeRef& p : *side)
      if (category(p) != first) return false;
  return true;
}

}  // namespace

Result<void> check_pid_sides(CheckedQuery& q) {
  if (q.pid < 0 || !q.span) return {};
  q.pid_at_begin = side_runs_in_keyed_task(q.span->begin, q.span->begin_key);
  q.pid_at_end = side_runs_in_keyed_task(q.probes, q.span->end_key);
  if (q.pid_at_begin || q.pid_at_end) return {};
  if (one_context(q)) {
    q.pid_at_begin = q.pid_at_end = true;
    return {};
  }
  // A span of an object, not a task (a block request by device and sector, a socket by
  // address): it is the process's that began it, as begin.pid shows; whoever ends it (an
  // interrupt, a kworker) ends it.
  if (!key_names_task(q.span->begin_key) && !key_names_task(q.span->end_key)) {
    q.pid_at_begin = true;
    return {};
  }
  auto text = [](const std::vector<ExprPtr>& key) {
    std::string out;
    for (const auto& k : key) out += (out.empty() ? "" : ", ") + k->text;
    return out;
  };
  const ProbeRef& begin = q.span->begin.front();
  return error_at(begin.loc,
                  fmt::format("{} cannot pick this span's process: neither '{}' nor '{}' runs in "
                              "the task its key names ({}; {}); filter on the key instead ({})",
                              q.pid_tree ? "-c" : "--pid", begin.spec, q.probes.front().spec,
                              text(q.span->begin_key), text(q.span->end_key),
                              q.span->composite()
                                  ? std::string("a begin_where on the event's fields")
                                  : "begin_where: " + text(q.span->begin_key) + " == TID, one thread"));
}

}  // namespace bpfql
