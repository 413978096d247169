// `nest: true`: the thread's spans are a stack in its task storage, {depth, s[kMaxNestDepth]}.
// A begin pushes (its value at s[depth], then depth + 1), an end pops (depth - 1, then reads
// s[depth]); levels past the stack still count in depth but store nothing: such a begin is
// counted as dropped and its end finds no begin. An end at depth 0 (the trace began inside the
// call) finds none either and leaves the depth at 0. Every end pops, whatever `where` says:
// the stack follows the calls, and `where` only decides what is recorded.
// `report: flow`: a begin also streams a row (its select items typed at the begin probe,
// CheckedSpan::flow_begin_stream), marked flow_call = 1 and begun = 0 (no duration yet).
#include "compiler/check/span_nest.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/codegen/function.h"

namespace bpfql::codegen {
namespace {

// Where a full value map jumps to; a label needs a statement after it (a fused body goes on).
constexpr const char* kDoneLabel = "_done:;";

// The slot of level `depth`, its index masked so the verifier sees it in bounds.
std::string nest_slot(const std::string& depth) {
  static_assert((kMaxNestDepth & (kMaxNestDepth - 1)) == 0, "a power of two: the mask bounds it");
  return fmt::format("st->s[{} & {}]", depth, kMaxNestDepth - 1);
}

}  // namespace

Result<void> FunctionGen::emit_nest_begin() {
  if (query_.pid_at_begin)
    if (auto r = emit_pid_filter(); !r) return r;
  std::string ts = cached("ts", "u64 ts = bpf_ktime_get_ns();");
  line(fmt::format(
      "{} *st = {};", layout_.nest.type(),
      task_storage_get(dialect(), layout_.map("start"), "BPF_LOCAL_STORAGE_GET_F_CREATE")));
  emit_no_slot_exit("st");
  line("u32 depth = st->depth;  /* spans of the thread already open */");
  // The kernel keeps at most 64 return probes pending per thread (MAX_URETPROBE_DEPTH): past
  // that a return probe's end never comes, so such a begin must not count either.
  bool ends_at_return =
      std::ranges::any_of(query_.probes, [](const ProbeRef& p) { return p.is_return(); });
  if (!ends_at_return) line("st->depth = depth + 1;");
  line(fmt::format("if (depth >= {}) {{  /* {} */", kMaxNestDepth,
                   ends_at_return ? "past the kernel's pending returns: neither counted nor stored"
                                  : "deeper than the stack: counted, not stored"));
  line(fmt::format("  {}_drop();", layout_.prefix));
  line("  return 0;");
  line("}");
  if (ends_at_return) line("st->depth = depth + 1;");
  if (layout_.span_val.empty()) {
    line(fmt::format("{} = {};", nest_slot("depth"), ts));
  } else {
    if (auto r = emit_span_value(); !r) return r;
    line(fmt::format("__builtin_memcpy(&{0}, &{1}, sizeof({1}));", nest_slot("depth"),
                     layout_.span_var));
  }
  if (query_.span->report_flow) return emit_flow_begin_row();
  return {};
}

// A begin row: `where` and the select items as typed at the begin probe; what reads the
// stored begin (`duration`, `begin.`) stays absent (begun = 0).
Result<void> FunctionGen::emit_flow_begin_row() {
  if (auto r = emit_filters(query_.span->flow_begin_filters); !r) return r;
  ensure_event_zeroed();
  line(fmt::format("{}.ts = {};", layout_.event_var, cached("ts", "u64 ts = bpf_ktime_get_ns();")));
  const auto& items = query_.span->flow_begin_stream;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i]) continue;
    const CMember* m = layout_.event.find(layout_.event_members[i]);
    if (auto r = emit_member(*items[i], layout_.event_var + "." + m->name, m->size); !r) return r;
  }
  line(fmt::format("{}.{} = 0;  /* no duration yet */", layout_.event_var, kBegunMember));
  emit_flow_marks(true);
  emit_event_submit();
  return {};
}

void FunctionGen::emit_flow_marks(bool call, const std::string& indent) {
  if (!query_.span->report_flow) return;
  const std::string& ev = layout_.event_var;
  line(indent + fmt::format("{}.{} = {};", ev, kFlowCallMember, call ? 1 : 0));
  line(indent + fmt::format("{}.{} = depth;", ev, kFlowDepthMember));
}

// The end: pop the innermost span (`sp`: its stored begin, or null when there is none to
// close), then the filters, then the row or the aggregates.
Result<void> FunctionGen::emit_nest_end() {
  if (query_.pid_at_end)
    if (auto r = emit_pid_filter(); !r) return r;
  cached("ts", "u64 ts = bpf_ktime_get_ns();");
  line(fmt::format("{} *st = {};", layout_.nest.type(),
                   task_storage_get(dialect(), layout_.map("start"), "0")));
  line(fmt::format("{} *sp = 0;", layout_.span_val_type()));
  line("u32 depth = 0;  /* an end with no span open: at the outermost level */");
  line("if (st && st->depth > 0) {  /* every end closes the innermost span */");
  line("  depth = st->depth - 1;");
  line("  st->depth = depth;");
  line(fmt::format("  if (depth < {})", kMaxNestDepth));
  line(fmt::format("    sp = &{};", nest_slot("depth")));
  line("}");
  std::vector<ExprPtr> filters;
  for (const auto& f : query_.filters) filters.push_back(clone_expr(*f));
  if (const auto* own = query_.span->end_filters_at(static_cast<size_t>(env_.index)))
    for (const auto& f : *own) filters.push_back(clone_expr(*f));
  if (query_.span->keep_unmatched) {  // no filter reads the begin (checker)
    if (auto r = emit_filters(filters); !r) return r;
    if (query_.streaming()) return emit_nest_end_event();
    if (auto r = emit_key(); !r) return r;
    if (auto r = emit_update(); !r) return r;
    if (!layout_.val.empty()) line(layout_.prefix + kDoneLabel);
    return {};
  }
  line("if (!sp)  /* no begin to end */");
  line("  return 0;");
  emit_duration();
  if (auto r = emit_filters(filters); !r) return r;
  if (query_.streaming()) {
    if (auto r = emit_event_members(EventPart::All); !r) return r;
    if (query_.span->report_flow) line(fmt::format("{}.{} = 1;", layout_.event_var, kBegunMember));
    emit_flow_marks(false);
    emit_event_submit();
    return {};
  }
  if (auto r = emit_key(); !r) return r;
  if (auto r = emit_update(); !r) return r;
  if (!layout_.val.empty()) line(layout_.prefix + kDoneLabel);
  return {};
}

// unmatched: keep, streamed: an end without a begin is sent without its begin values.
Result<void> FunctionGen::emit_nest_end_event() {
  if (auto r = emit_event_members(EventPart::FromEnd); !r) return r;
  const std::string begun = fmt::format("{}.{}", layout_.event_var, kBegunMember);
  line("if (!sp) {  /* no begin: recorded without its values (unmatched: keep) */");
  line(fmt::format("  {} = 0;", begun));
  emit_flow_marks(false, "  ");
  emit_event_submit("  ");
  line("  return 0;");
  line("}");
  emit_duration();
  if (auto r = emit_event_members(EventPart::FromBegin); !r) return r;
  line(fmt::format("{} = 1;", begun));
  emit_flow_marks(false);
  emit_event_submit();
  return {};
}

}  // namespace bpfql::codegen
