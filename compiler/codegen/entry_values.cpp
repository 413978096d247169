// Entry values (entry_values.h): the entry program that stores them, the lookup a return makes,
// and the values read back.
#include "compiler/codegen/entry_values.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/check/entry_values.h"
#include "compiler/codegen/c_names.h"
#include "compiler/codegen/function.h"

namespace bpfql::codegen {
namespace {

std::string key_type(const QueryLayout& L) { return "struct " + L.map("entry_key"); }
std::string value_type(const QueryLayout& L) { return "struct " + L.map("entry_val"); }

bool any_reads(const std::vector<ExprPtr>& exprs) {
  return std::ranges::any_of(exprs, [](const ExprPtr& e) { return reads_entry_value(*e); });
}

}  // namespace

bool function_reads_entry(const CheckedQuery& q, Role role, size_t index) {
  if (q.entry_values.empty()) return false;
  if (role == Role::SpanBegin)
    return any_reads(q.span->begin_key_at(index)) || any_reads(q.span->begin_filters_at(index)) ||
           any_reads(q.span->captures);
  if (role != Role::Main) return false;
  if (any_reads(q.filters)) return true;
  for (const auto& k : q.keys)
    if (reads_entry_value(*k.expr)) return true;
  for (const auto& a : q.aggregates)
    if (a.arg && reads_entry_value(*a.arg)) return true;
  for (const auto& s : q.stream)
    if (reads_entry_value(*s.expr)) return true;
  if (!q.span) return false;
  const auto* own = q.span->end_filters_at(index);
  return any_reads(q.span->end_key_at(index)) || (own && any_reads(*own));
}

std::vector<ProbeRef> entry_probes(const CheckedQuery& q) {
  std::vector<ProbeRef> out;
  auto add = [&](const ProbeRef& ret) {
    ProbeRef entry = entry_probe_of(ret);
    if (std::ranges::none_of(out, [&](const ProbeRef& p) { return p.spec == entry.spec; }))
      out.push_back(std::move(entry));
  };
  if (q.span)
    for (size_t k = 0; k < q.span->begin.size(); ++k)
      if (function_reads_entry(q, Role::SpanBegin, k)) add(q.span->begin[k]);
  for (size_t k = 0; k < q.probes.size(); ++k)
    if (function_reads_entry(q, Role::Main, k)) add(q.probes[k]);
  return out;
}

std::string entry_declarations(const CheckedQuery& q, const QueryLayout& L, Dialect d,
                               std::vector<PlanMap>& maps) {
  if (q.entry_values.empty()) return "";
  StructLayout key(L.map("entry_key"));
  key.append("id", "u64", 0, 8, 8, "pid_tgid");
  key.append("sp", "u64", 0, 8, 8, "the stack pointer at the entry: the return address's slot");
  StructLayout val(L.map("entry_val"));
  for (size_t i = 0; i < q.entry_values.size(); ++i)
    val.append(fmt::format("v{}", i), "u64", 0, 8, 8,
               "entry." + c_names::comment_text(q.entry_values[i]->text));
  // A plain hash, not an LRU: only the call's own thread stores, reads and deletes its record,
  // so the one a return copies cannot be reused under it. Records of calls whose return never
  // comes (longjmp) are replaced by the next call at the same frame.
  MapDecl m{
      MapKind::Hash, L.map("entry"), key.type(), val.type(), std::max<uint32_t>(q.max_entries, 1),
      key.size(),    val.size()};
  maps.push_back(plan_map(m));
  return key.declaration() + val.declaration() + map_declaration(d, m) +
         "  /* (thread, entry sp) -> the call's entry values */\n";
}

// The entry program: every entry value of the query, stored under this call's activation.
Result<void> FunctionGen::emit_entry_store() {
  if (auto r = emit_pid_filter(); !r) return r;  // the returns filter alike
  line(fmt::format("{} ent = {{}};", value_type(layout_)));
  for (size_t i = 0; i < query_.entry_values.size(); ++i)
    if (auto r = emit_member(*query_.entry_values[i], fmt::format("ent.v{}", i), 8); !r) return r;
  std::string id = cached("pid_tgid", "u64 pid_tgid = bpf_get_current_pid_tgid();");
  line(fmt::format("{} ekey = {{}};", key_type(layout_)));
  line(fmt::format("ekey.id = {};", id));
  line("ekey.sp = ctx->sp;  /* points at the return address */");
  line(fmt::format("if ({})  /* the map is full: the return finds no record, */",
                   map_update(dialect(), layout_.map("entry"), "&ekey", "&ent")));
  line(fmt::format("  {};  /* nor an earlier call's at this frame */",
                   map_delete(dialect(), layout_.map("entry"), "&ekey")));
  return {};
}

// At the return: `ret` popped the return address, so this call's entry stored its record under
// sp - 8. The record is copied, then deleted.
Result<void> FunctionGen::emit_entry_load() {
  std::string id = cached("pid_tgid", "u64 pid_tgid = bpf_get_current_pid_tgid();");
  line(fmt::format("{} ekey = {{}};", key_type(layout_)));
  line(fmt::format("ekey.id = {};", id));
  line("ekey.sp = ctx->sp - 8;  /* the entry's sp: `ret` popped the return address */");
  line(fmt::format("{} *ep = {};", value_type(layout_),
                   map_lookup(dialect(), layout_.map("entry"), "&ekey")));
  line("if (!ep) {  /* no record of this call's entry: nothing is recorded */");
  line(fmt::format("  {}_drop();", layout_.prefix));
  line("  return 0;");
  line("}");
  line(fmt::format("{} ent = *ep;", value_type(layout_)));
  line(map_delete(dialect(), layout_.map("entry"), "&ekey") + ";");
  return {};
}

Result<CValue> FunctionGen::entry_value(const Expr& e, const EntryValue& v) {
  if (!function_reads_entry(query_, env_.role, static_cast<size_t>(env_.index)))
    return std::unexpected(unsupported(e, "'entry.' exists only at a return probe"));
  auto slot = std::ranges::find_if(query_.entry_values,
                                   [&](const ExprPtr& x) { return x->text == v.inner->text; });
  if (slot == query_.entry_values.end())
    return std::unexpected(unsupported(e, fmt::format("'{}' was not stored", e.text)));
  std::string member = fmt::format("ent.v{}", slot - query_.entry_values.begin());
  if (e.type.is_bool()) return CValue{"(" + member + " != 0)", Type::boolean()};
  int bytes = static_cast<int>(member_size(e.type));
  if (bytes == 8 && !e.type.is_signed) return CValue{member, e.type};
  return CValue{fmt::format("(({}){})", c_int_type(bytes, e.type.is_signed), member), e.type};
}

}  // namespace bpfql::codegen
