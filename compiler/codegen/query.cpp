// A query's map declarations (its structs, maps and drop/lost counters) and the Plan's
// description of it, both read off the layout query_layout.cpp computed: the Plan's offsets come
// from the same StructLayout the C declaration is printed from.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/buckets.h"
#include "compiler/codegen/c_names.h"
#include "compiler/codegen/entry_values.h"
#include "compiler/codegen/internal.h"

namespace bpfql::codegen {

ValueKind value_kind(const Expr& e) {
  switch (e.type.kind) {
    case TypeKind::Boolean:
      return ValueKind::Bool;
    case TypeKind::String:
      return ValueKind::String;
    case TypeKind::Bytes:
      return ValueKind::Bytes;
    case TypeKind::Stack: {
      // `begin.ustack` is a user stack too: the builtin inside the capture says which.
      const auto* c = e.as<Capture>();
      auto* b = (c ? *c->inner : e).as<BuiltinRef>();
      return b && b->which == Builtin::Ustack ? ValueKind::UserStack : ValueKind::KernelStack;
    }
    default:
      return e.type.is_signed ? ValueKind::Signed : ValueKind::Unsigned;
  }
}

namespace {

// Where a `report: open` key or aggregate argument (a capture, begin.ts or age) is stored.
SpanValueSource span_value_source(const CheckedQuery& q, const QueryLayout& L, const Expr* e) {
  SpanValueSource s;
  if (!e) return s;
  if (const auto* b = e->as<BuiltinRef>(); b && b->which == Builtin::Age) {
    s.kind = SpanValueSource::Kind::Age;
    return s;
  }
  s.kind = SpanValueSource::Kind::Field;
  s.is_signed = e->type.is_integer() && e->type.is_signed;
  const auto* c = e->as<Capture>();
  int slot = c ? q.span->capture_slot(*c->inner) : -1;
  const CMember* m = slot >= 0 ? capture_member_at(L, static_cast<size_t>(slot)) : nullptr;
  s.offset = m ? m->offset : 0;  // begin.ts: the stored begin time, first
  s.size = m ? m->size : 8;
  return s;
}

// The values of grouped keys: preallocated. A per-CPU hash whose entries are allocated as keys
// appear would spare map creation ~8 ms (the kernel allocates every preallocated entry's per-CPU
// value one by one), but its allocator keeps one spare per-CPU value per CPU, refilled from an
// irq_work: two new keys on one CPU with interrupts off (sched_switch, say) before the refill,
// and the second fails with ENOMEM, which would be counted as a key dropped from a full map.
MapKind values_map_kind(const CheckedQuery&) { return MapKind::PercpuHash; }

}  // namespace

std::string query_declarations(const CheckedQuery& q, const QueryLayout& L, Dialect d,
                               std::vector<PlanMap>& maps) {
  std::string out =
      fmt::format("/* query '{}' ({}:{}){} */\n", c_names::comment_text(q.name),
                  c_names::comment_text(q.loc.file), q.loc.line,
                  q.description.empty() ? "" : ": " + c_names::comment_text(q.description));
  for (const StructLayout* s : {&L.key, &L.hkey, &L.val, &L.event, &L.span_key, &L.span_val,
                                &L.nest, &L.scratch})
    if (!s->empty()) out += s->declaration();
  auto declare = [&](MapDecl m, const char* comment = nullptr) {
    maps.push_back(plan_map(m));
    out += map_declaration(d, m);
    out += comment ? fmt::format("  /* {} */\n", comment) : "\n";
  };
  uint32_t max_entries = std::max<uint32_t>(q.max_entries, 1);
  // report: open: the rows are read off the open spans at each print, so no values are kept.
  const bool aggregates_in_kernel = !(q.span && q.span->report_open);
  if (!L.val.empty() && aggregates_in_kernel) {
    if (L.key.empty())
      declare({MapKind::PercpuArray, L.map("vals"), "", L.val.type(), 1, 4, L.val.size()});
    else
      declare({values_map_kind(q), L.map("vals"), L.key.type(), L.val.type(), max_entries,
               L.key.size(), L.val.size()});
    if (L.slots)
      declare({MapKind::PercpuArray, L.map("slots"), "", L.val.type(), L.slots, 4, L.val.size()},
              "the values of system call numbers below the size, at their index");
  }
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    if (L.hist_maps[i].empty() || !aggregates_in_kernel) continue;
    const auto& agg = q.aggregates[i];
    bool is_signed = agg.arg && agg.arg->type.is_integer() && agg.arg->type.is_signed;
    int slots =
        histogram_slots(agg.kind, agg.lhist_min, agg.lhist_max, agg.lhist_step, is_signed);
    if (L.key.empty()) {
      declare({MapKind::PercpuArray, L.hist_maps[i], "", "u64", static_cast<uint64_t>(slots), 4, 8});
    } else {
      // Keys times occupied slots, allocated as they are used.
      uint64_t entries =
          std::min<uint64_t>(uint64_t{max_entries} * static_cast<uint64_t>(slots), kMaxHistEntries);
      entries = std::max<uint64_t>(entries, max_entries);
      declare({MapKind::PercpuHashOnDemand, L.hist_maps[i], L.hkey.type(), "u64", entries,
               L.hkey.size(), 8});
    }
  }
  uint32_t span_val_size = L.span_val.empty() ? 8 : L.span_val.size();
  if (q.span && q.span->nest)
    declare({MapKind::TaskStorage, L.map("start"), "", L.nest.type(), 0, 4, L.nest.size()},
            "the thread's open spans, nested: a stack of begins");
  else if (q.span && span_in_task_storage(q))
    declare({MapKind::TaskStorage, L.map("start"), "", L.span_val_type(), 0, 4, span_val_size},
            L.span_val.empty() ? "the thread's span begin time (ns); 0 = none"
                               : "the thread's open span; ts 0 = none");
  else if (q.span)
    declare({MapKind::Hash, L.map("start"), L.span_key_type(), L.span_val_type(), max_entries,
             L.span_key.empty() ? 8 : L.span_key.size(), span_val_size},
            L.span_val.empty() ? "span key -> begin time (ns)"
                               : "span key -> begin time (ns) and captured values");
  if (q.streaming()) declare({MapKind::PerfOutput, L.map("events"), "", "", 0});
  if (L.uses_stacks) declare({MapKind::StackTrace, L.map("stacks"), "", "", kStackTraceEntries});
  if (!L.scratch.empty())
    declare({MapKind::PercpuArray, L.scratch.tag(), "", "struct " + L.scratch.tag(), 1, 4,
             L.scratch.size()},
            "too big for the stack");
  // Counters of what went wrong: off the hot path, and short (one atomic add, no lookup), so
  // that they cost a program next to nothing in instructions either.
  out += entry_declarations(q, L, d, maps);
  declare({MapKind::Counter, L.map("dropped"), "", "u64", 1, 4, 8});
  out += fmt::format(
      "\n/* a key dropped because a map was full: counted, and printed by the runtime */\n"
      "static __always_inline void {0}_drop(void) {{\n"
      "  {1}\n"
      "}}\n",
      L.prefix, counter_increment(d, L.map("dropped")));
  if (q.streaming()) {
    declare({MapKind::Counter, L.map("lost"), "", "u64", 1, 4, 8});
    out += fmt::format(
        "/* an event the perf buffer had no room for: counted, and printed by the runtime */\n"
        "static __always_inline void {0}_lose(void) {{\n"
        "  {1}\n"
        "}}\n",
        L.prefix, counter_increment(d, L.map("lost")));
  }
  return out;
}

PlanQuery plan_query(const CheckedQuery& q, const QueryLayout& L) {
  PlanQuery p;
  p.name = q.name;
  p.description = q.description;
  p.loc = q.loc;
  for (const auto& probe : q.probes) p.probe_names.push_back(probe.spec);
  p.streaming = q.streaming();
  p.columns = q.columns;
  for (size_t i = 0; i < q.keys.size() && !L.key.empty(); ++i) {
    const CMember* m = L.key.find(L.key_members[i]);
    p.keys.push_back(PlanField{q.keys[i].name, value_kind(*q.keys[i].expr), m->offset, m->size,
                               q.keys[i].display, q.keys[i].unit, q.keys[i].symbols,
                               q.keys[i].symbol_flags});
  }
  p.key_size = L.key.empty() ? 0 : L.key.size();
  const bool open = q.span && q.span->report_open;
  if (!L.val.empty()) {
    if (!open) p.value_map = L.map("vals");
    if (L.slots) p.slot_map = L.map("slots");
    p.value_size = L.val.size();
  }
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    const auto& agg = q.aggregates[i];
    PlanAggregate a;
    a.name = agg.name;
    a.kind = agg.kind;
    a.is_signed = agg.arg && agg.arg->type.is_integer() && agg.arg->type.is_signed;
    if (!L.agg_members[i].empty()) {
      uint32_t offset = L.val.find(L.agg_members[i])->offset;
      (agg.kind == AggKind::Min || agg.kind == AggKind::Max ? a.minmax_offset : a.sum_offset) =
          offset;
    }
    if (!open) a.map_name = L.hist_maps[i];
    a.lhist_min = agg.lhist_min;
    a.lhist_max = agg.lhist_max;
    a.lhist_step = agg.lhist_step;
    a.percentiles = agg.percentiles;
    a.unit = agg.unit;
    if (agg.arg) a.arg_text = agg.arg->text;
    p.aggregates.push_back(std::move(a));
  }
  p.computed = q.computed;
  p.dropped_map = L.map("dropped");
  if (p.streaming) {
    p.event_buffer = L.map("events");
    p.lost_map = L.map("lost");
    p.event_size = L.event.size();
    for (size_t i = 0; i < q.stream.size(); ++i) {
      const CMember* m = L.event.find(L.event_members[i]);
      p.event_fields.push_back(PlanField{q.stream[i].name, value_kind(*q.stream[i].expr), m->offset,
                                         m->size, q.stream[i].display, q.stream[i].unit,
                                         q.stream[i].symbols, q.stream[i].symbol_flags,
                                         q.span &&
                                             (q.span->keep_unmatched || q.span->report_flow) &&
                                             reads_span(*q.stream[i].expr)});
    }
    if (q.span && (q.span->keep_unmatched || q.span->report_flow))
      p.begun_offset = L.event.find(kBegunMember)->offset;
    if (q.span && q.span->report_flow) {
      p.flow_call_offset = L.event.find(kFlowCallMember)->offset;
      p.flow_depth_offset = L.event.find(kFlowDepthMember)->offset;
    }
  }
  if (L.uses_stacks) p.stack_map = L.map("stacks");
  if (q.span && !span_in_task_storage(q)) {
    p.open_span_map = L.map("start");
    p.span_key_size = L.span_key.empty() ? 8 : L.span_key.size();
    p.span_value_size = L.span_val.empty() ? 8 : L.span_val.size();
  }
  if (q.span)
    for (const auto& c : q.span->captures) p.keep_stacks |= c->type.kind == TypeKind::Stack;
  if (open) {
    p.report_open = true;
    for (const auto& k : q.keys) p.open_keys.push_back(span_value_source(q, L, k.expr.get()));
    for (const auto& a : q.aggregates) p.open_args.push_back(span_value_source(q, L, a.arg.get()));
  }
  p.interval_ns = q.interval_ns;
  p.stop_after_ns = q.stop_after_ns;
  p.cumulative = q.cumulative;
  p.order_by = q.order_by;
  p.descending = q.descending;
  p.limit = q.limit;
  p.max_entries = q.max_entries;
  return p;
}

}  // namespace bpfql::codegen
