// A span's end under `unmatched: keep`: an end whose key has no open span is recorded too. The
// checker leaves nothing here that decides with the begin (no `where`, aggregate or key reads
// `duration` or `begin.`), so every end that passed the filters is recorded: a streamed event
// gets the end's own values, then, when the begin was found, `duration`, the captures and
// `begun = 1`; an end without a begin is sent with `begun = 0`, and the runtime prints its
// begin values as absent (PlanQuery::begun_offset).
#include <fmt/format.h>

#include "compiler/codegen/function.h"

namespace bpfql::codegen {

Result<void> FunctionGen::emit_span_end_keeping() {
  if (auto r = emit_span_find(); !r) return r;
  std::string found = span_found();
  if (!query_.streaming()) {
    if (auto r = emit_key(); !r) return r;
    if (auto r = emit_update(); !r) return r;
    if (!layout_.val.empty()) line(layout_.prefix + "_done:");
    line(fmt::format("if ({})  /* the span is over */", found));
    line("  " + span_consume());
    return {};
  }
  if (auto r = emit_event_members(EventPart::FromEnd); !r) return r;
  std::string begun = fmt::format("{}.{}", layout_.event_var, kBegunMember);
  line(fmt::format("if ({}) {{  /* no begin: recorded without its values (unmatched: keep) */",
                   span_missing()));
  line(fmt::format("  {} = 0;", begun));
  emit_event_submit("  ");
  line("  return 0;");
  line("}");
  emit_duration();
  if (auto r = emit_event_members(EventPart::FromBegin); !r) return r;
  line(fmt::format("{} = 1;", begun));
  emit_event_submit();
  emit_span_consume();
  return {};
}

}  // namespace bpfql::codegen
