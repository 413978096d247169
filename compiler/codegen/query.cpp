// A query's layout (key, value, event and scratch structs; where each string lives; what stays on
// the BPF stack), its map declarations, and the Plan's description of all of it. The Plan's
// offsets are read off the same StructLayout the C declaration is printed from.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "compiler/buckets.h"
#include "compiler/codegen/c_names.h"
#include "compiler/codegen/internal.h"

namespace bpfql::codegen {
namespace {

uint32_t member_align(const Type& t) {
  switch (t.kind) {
    case TypeKind::String:
      return 8;  // compared a word at a time
    case TypeKind::Boolean:
    case TypeKind::Bytes:  // copied, never loaded as words
      return 1;
    default:
      return member_size(t);
  }
}

// How a key or an event holds a stack: a map key holds the stack's id in the stack map; a
// streamed event holds the addresses themselves.
enum class StackMember { Id, Frames };

// Members for the values of `exprs` (named after `columns`), widest alignment first so no
// padding is needed between them; returns their C names in the order of `exprs`.
std::vector<std::string> add_members(StructLayout& s, const std::vector<const Expr*>& exprs,
                                     const std::vector<std::string>& columns, const char* fallback,
                                     std::set<std::string> taken, StackMember stacks) {
  std::vector<std::string> names;
  for (size_t i = 0; i < exprs.size(); ++i)
    names.push_back(c_names::field_name(columns[i], fmt::format("{}{}", fallback, i), taken));
  auto frames = [&](const Type& t) {
    return t.kind == TypeKind::Stack && stacks == StackMember::Frames;
  };
  auto align = [&](const Type& t) { return frames(t) ? 8u : member_align(t); };
  std::vector<size_t> order(exprs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Stack addresses go last: the event is zeroed only up to them (bpf_get_stack fills them).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    bool fa = frames(exprs[a]->type), fb = frames(exprs[b]->type);
    if (fa != fb) return fb;
    return align(exprs[a]->type) > align(exprs[b]->type);
  });
  for (size_t i : order) {
    const Type& t = exprs[i]->type;
    if (frames(t)) {
      s.append(names[i], "u64", kStreamStackFrames, kStreamStackFrames * 8, 8,
               columns[i] + " (addresses, 0 after the last)");
      continue;
    }
    uint32_t size = member_size(t);
    std::string type = t.is_string()                 ? "char"
                       : t.is_bool() || t.is_bytes() ? "u8"
                       : t.kind == TypeKind::Stack
                           ? "s32"
                           : c_int_type(static_cast<int>(size), t.is_signed);
    std::string comment = columns[i] + (t.kind == TypeKind::Stack ? " (stack id)" : "");
    bool array = t.is_string() || t.is_bytes();
    s.append(names[i], type, array ? size : 0, size, member_align(t), comment);
  }
  return names;
}

const CMember* member(const StructLayout& s, const std::string& name) {
  for (const auto& m : s.members())
    if (m.name == name) return &m;
  return nullptr;
}

// Something that lives on the stack when it fits, else in the per-CPU scratch array.
struct Placement {
  uint32_t used = 0;
  bool place(uint32_t size) {
    if (size > kMaxStackItem || used + size > kStackBudget) return false;
    used += size;
    return true;
  }
};

// A string buffer to place: the canonical name of its string and its size.
struct Buffer {
  std::string canon;
  uint32_t size;
};

// Where the strings of one function live: members of the key/event (already in `homes`), the
// tracepoint record itself, or buffers named `stem`N (returned, to be placed).
std::vector<Buffer> plan_strings(const std::vector<const Expr*>& exprs,
                                 std::map<std::string, StringHome>& homes, const char* stem,
                                 const std::map<std::string, StringHome>* span_homes = nullptr) {
  std::vector<StringUse> uses;
  for (const Expr* e : exprs) collect_strings(*e, uses);
  std::vector<Buffer> buffers;
  for (const auto& use : uses) {
    if (homes.count(use.canon)) continue;
    if (span_homes && use.expr->as<Capture>()) {  // read where the begin stored it
      auto it = span_homes->find(use.canon);
      if (it != span_homes->end()) {
        homes[use.canon] = it->second;
        continue;
      }
    }
    const auto* field = use.expr->as<FieldRef>();
    if (field && use.expr->type.source == StringSource::CharArray && !use.indexed) {
      homes[use.canon] = StringHome{"args->" + field->name, use.size, true, false};
      continue;
    }
    homes[use.canon] =
        StringHome{fmt::format("{}{}", stem, buffers.size()), use.size, false, false};
    buffers.push_back(Buffer{use.canon, use.size});
  }
  return buffers;
}

Result<void> layout_key(const CheckedQuery& q, QueryLayout& L) {
  if (q.streaming() || q.keys.empty()) return {};
  L.key = StructLayout(L.map("key"));
  std::vector<const Expr*> exprs;
  std::vector<std::string> columns;
  for (const auto& k : q.keys) {
    exprs.push_back(k.expr.get());
    columns.push_back(k.name);
  }
  L.key_members = add_members(L.key, exprs, columns, "k", {}, StackMember::Id);
  L.key.pad_to_multiple(8);
  bool has_hist = std::any_of(q.aggregates.begin(), q.aggregates.end(),
                              [](const AggregateItem& a) { return is_histogram(a.kind); });
  if (has_hist) {  // histogram maps are keyed by the key and a slot
    L.hkey = StructLayout(L.map("hkey"));
    L.hkey.append("k", L.key.type(), 0, L.key.size(), 8);
    L.hkey.append("slot", "u64", 0, 8, 8, "histogram slot");
  }
  uint32_t map_key = L.hkey.empty() ? L.key.size() : L.hkey.size();
  if (map_key > kMaxMapKey)
    return error_at(q.keys[0].loc,
                    fmt::format("the group_by keys of query '{}' take {} bytes; a BPF map key "
                                "holds at most {} (lower `strlen` or group by fewer strings)",
                                q.name, map_key, kMaxMapKey));
  return {};
}

void layout_values(const CheckedQuery& q, QueryLayout& L) {
  L.agg_members.assign(q.aggregates.size(), "");
  L.hist_maps.assign(q.aggregates.size(), "");
  if (q.streaming()) return;
  bool only_histograms = !q.aggregates.empty() &&
                         std::all_of(q.aggregates.begin(), q.aggregates.end(),
                                     [](const AggregateItem& a) { return is_histogram(a.kind); });
  if (!only_histograms) {
    L.val = StructLayout(L.map("val"));
    L.val.append("n", "u64", 0, 8, 8, "events of this key on this CPU");
  }
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    const auto& agg = q.aggregates[i];
    const char* stem =
        agg.kind == AggKind::Min   ? "min"
        : agg.kind == AggKind::Max ? "max"
        : agg.kind == AggKind::Sum || agg.kind == AggKind::Avg || agg.kind == AggKind::Stats
            ? "sum"
            : nullptr;
    if (is_histogram(agg.kind)) L.hist_maps[i] = fmt::format("{}_h{}", L.prefix, i);
    if (!stem) continue;
    bool is_signed = agg.arg && agg.arg->type.is_integer() && agg.arg->type.is_signed;
    L.agg_members[i] = fmt::format("{}{}", stem, i);
    L.val.append(L.agg_members[i], is_signed ? "s64" : "u64", 0, 8, 8, agg.name);
  }
}

void layout_event(const CheckedQuery& q, QueryLayout& L) {
  if (!q.streaming()) return;
  L.event = StructLayout(L.map("event"));
  L.event.append("ts", "u64", 0, 8, 8, "event time (ns)");
  std::vector<const Expr*> exprs;
  std::vector<std::string> columns;
  for (const auto& item : q.stream) {
    exprs.push_back(item.expr.get());
    columns.push_back(item.name);
  }
  L.event_members = add_members(L.event, exprs, columns, "f", {"ts"}, StackMember::Frames);
  L.event.pad_to_multiple(8);
  L.event_zeroed = L.event.size();
  for (size_t i = 0; i < exprs.size(); ++i)
    if (exprs[i]->type.kind == TypeKind::Stack)
      L.event_zeroed = std::min(L.event_zeroed, member(L.event, L.event_members[i])->offset);
}

// A composite key is a struct of u64 (no padding to zero); the value holds the begin time and
// the captures, widest first.
void layout_span(const CheckedQuery& q, QueryLayout& L) {
  if (!q.span) return;
  if (q.span->composite()) {
    L.span_key = StructLayout(L.map("skey"));
    for (size_t i = 0; i < q.span->begin_key.size(); ++i)
      L.span_key.append(fmt::format("k{}", i), "u64", 0, 8, 8, q.span->end_key[i]->text);
  }
  L.span_var = "sv";
  if (q.span->captures.empty()) return;
  L.span_val = StructLayout(L.map("span"));
  L.span_val.append("ts", "u64", 0, 8, 8, "begin time (ns); 0 = none");
  std::vector<const Expr*> exprs;
  std::vector<std::string> columns;
  for (const auto& c : q.span->captures) {
    exprs.push_back(c.get());
    columns.push_back("begin." + c->text);
  }
  L.capture_members = add_members(L.span_val, exprs, columns, "c", {"ts"}, StackMember::Id);
  L.span_val.pad_to_multiple(8);
}

// Decides every string's home; returns the buffers of each role, still to be placed.
std::array<std::vector<Buffer>, 2> layout_strings(const CheckedQuery& q, QueryLayout& L) {
  // A string that is a key or event member is read straight into it.
  auto& main = L.strings[static_cast<int>(Role::Main)];
  const auto& members = q.streaming() ? L.event_members : L.key_members;
  for (size_t i = 0; i < members.size(); ++i) {
    const Expr& e = q.streaming() ? *q.stream[i].expr : *q.keys[i].expr;
    std::string canon = string_canon(e);
    if (e.type.is_string() && !canon.empty() && !main.count(canon))
      main[canon] = StringHome{members[i], 0, false, true};  // completed by place_storage
  }
  std::vector<const Expr*> exprs;
  for (const auto& f : q.filters) exprs.push_back(f.get());
  for (const auto& k : q.keys) exprs.push_back(k.expr.get());
  for (const auto& s : q.stream) exprs.push_back(s.expr.get());
  for (const auto& a : q.aggregates)
    if (a.arg) exprs.push_back(a.arg.get());
  std::array<std::vector<Buffer>, 2> buffers;
  if (!q.span) {
    buffers[0] = plan_strings(exprs, main, "s");
    return buffers;
  }
  for (const auto& k : q.span->end_key) exprs.push_back(k.get());
  // A captured string: at the begin it is read straight into the span value; at the end it is
  // read from the stored value through `sp`.
  auto& begin_homes = L.strings[static_cast<int>(Role::SpanBegin)];
  std::map<std::string, StringHome> captured;
  for (size_t i = 0; i < q.span->captures.size(); ++i) {
    const Expr& c = *q.span->captures[i];
    std::string canon = string_canon(c);
    if (!c.type.is_string() || canon.empty()) continue;
    const CMember* m = member(L.span_val, L.capture_members[i]);
    if (!begin_homes.count(canon))
      begin_homes[canon] = StringHome{L.span_var + "." + m->name, m->size, false, true, false};
    captured["begin." + canon] = StringHome{"sp->" + m->name, m->size, false, false, true};
  }
  buffers[0] = plan_strings(exprs, main, "s", &captured);
  std::vector<const Expr*> begin;
  for (const auto& k : q.span->begin_key) begin.push_back(k.get());
  for (const auto& f : q.span->begin_filters) begin.push_back(f.get());
  for (const auto& c : q.span->captures) begin.push_back(c.get());
  buffers[1] = plan_strings(begin, begin_homes, "b");
  return buffers;
}

// What fits on the stack stays there, in order of use (key, event, the zero value, string
// buffers); the rest goes to the per-CPU scratch array. Then every home gets its C lvalue.
void place_storage(const CheckedQuery& q, QueryLayout& L,
                   const std::array<std::vector<Buffer>, 2>& buffers) {
  Placement stack;
  L.scratch = StructLayout(L.map("scratch"));
  if (!L.key.empty()) {
    const StructLayout& outer = L.hkey.empty() ? L.key : L.hkey;
    std::string name = L.hkey.empty() ? "key" : "hk";
    L.key_on_stack = stack.place(outer.size());
    if (!L.key_on_stack) L.scratch.append(name, outer.type(), 0, outer.size(), 8);
    L.key_outer = (L.key_on_stack ? "" : "sc->") + name;
    L.key_var = L.key_outer + (L.hkey.empty() ? "" : ".k");
  }
  if (!L.event.empty()) {
    L.event_on_stack = stack.place(L.event.size());
    if (!L.event_on_stack) L.scratch.append("ev", L.event.type(), 0, L.event.size(), 8);
    L.event_var = L.event_on_stack ? "ev" : "sc->ev";
  }
  if (!L.val.empty() && !L.key.empty()) {
    L.zero_on_stack = stack.place(L.val.size());
    if (!L.zero_on_stack)
      L.scratch.append("zero", L.val.type(), 0, L.val.size(), 8, "never written: stays zero");
    L.zero_var = L.zero_on_stack ? "zero" : "sc->zero";
  }
  // A span's begin is a function of its own, except where a probe both ends and begins a span:
  // both parts are inlined into one program, which has one stack.
  Placement begin_stack;
  bool one_function = q.span && std::any_of(q.probes.begin(), q.probes.end(),
                                            [&](const ProbeRef& p) { return also_begins(q, p); });
  Placement& begin_budget = one_function ? stack : begin_stack;
  if (!L.span_val.empty()) {
    L.span_val_on_stack = begin_budget.place(L.span_val.size());
    if (!L.span_val_on_stack) L.scratch.append("sv", L.span_val.type(), 0, L.span_val.size(), 8);
  }
  for (int role = 0; role < 2; ++role) {
    Placement& budget = role == 0 ? stack : begin_budget;
    for (const Buffer& b : buffers[role]) {
      StringHome& home = L.strings[role].at(b.canon);
      if (budget.place(b.size)) {
        L.stack_buffers[role].insert(home.lvalue);
      } else {
        L.scratch.append(home.lvalue, "char", b.size, b.size, 8);
        home.lvalue = "sc->" + home.lvalue;
      }
    }
  }
  if (!L.scratch.empty()) L.scratch.pad_to_multiple(8);
  if (!L.span_val.empty() && !L.span_val_on_stack) {
    for (auto& [canon, home] : L.strings[static_cast<int>(Role::SpanBegin)])
      if (home.member) home.lvalue = "sc->" + home.lvalue;
    L.span_var = "sc->sv";
  }
  for (auto& [canon, home] : L.strings[static_cast<int>(Role::Main)]) {
    if (!home.member) continue;
    home.size = member(q.streaming() ? L.event : L.key, home.lvalue)->size;
    home.lvalue = (q.streaming() ? L.event_var : L.key_var) + "." + home.lvalue;
  }
}

// The per-CPU maps' values must fit the kernel's limit (kMaxPercpuValue). The scratch array holds
// what is too big for the stack: a streamed event, a large key, string buffers.
Result<void> check_percpu_sizes(const CheckedQuery& q, const QueryLayout& L) {
  if (!L.val.empty() && L.val.size() > kMaxPercpuValue)
    return error_at(q.aggregates[0].loc,
                    fmt::format("the aggregates of query '{}' take {} bytes per key; a BPF per-CPU "
                                "map value holds at most {} (select fewer aggregates)",
                                q.name, L.val.size(), kMaxPercpuValue));
  if (L.scratch.size() <= kMaxPercpuValue) return {};
  if (q.streaming()) {
    std::string with_buffers = L.scratch.size() == L.event.size()
                                   ? ""
                                   : fmt::format(" ({} with its string buffers)", L.scratch.size());
    return error_at(q.stream[0].loc,
                    fmt::format("each event of query '{}' takes {} bytes{}; it is built in a BPF "
                                "per-CPU map value, which holds at most {} (select fewer columns "
                                "or lower `strlen`)",
                                q.name, L.event.size(), with_buffers, kMaxPercpuValue));
  }
  return error_at(q.loc, fmt::format("the strings of query '{}' take {} bytes of BPF per-CPU "
                                     "scratch, which holds at most {} (lower `strlen` or use "
                                     "fewer strings)",
                                     q.name, L.scratch.size(), kMaxPercpuValue));
}

}  // namespace

uint32_t member_size(const Type& t) {
  switch (t.kind) {
    case TypeKind::Integer:
      return t.bits <= 8 ? 1 : t.bits <= 16 ? 2 : t.bits <= 32 ? 4 : 8;
    case TypeKind::Boolean:
      return 1;
    case TypeKind::String:
      return static_cast<uint32_t>(std::max(t.str_size, 1));
    case TypeKind::Stack:
      return 4;
    case TypeKind::Bytes:
      return static_cast<uint32_t>(std::max(t.byte_len, 1));
    case TypeKind::Unknown:
      break;
  }
  return 8;
}

ValueKind value_kind(const Expr& e) {
  switch (e.type.kind) {
    case TypeKind::Boolean:
      return ValueKind::Bool;
    case TypeKind::String:
      return ValueKind::String;
    case TypeKind::Bytes:
      return ValueKind::Bytes;
    case TypeKind::Stack: {
      auto* b = e.as<BuiltinRef>();
      return b && b->which == Builtin::Ustack ? ValueKind::UserStack : ValueKind::KernelStack;
    }
    default:
      return e.type.is_signed ? ValueKind::Signed : ValueKind::Unsigned;
  }
}

Result<QueryLayout> layout_query(const CheckedQuery& q, int index) {
  QueryLayout L;
  L.index = index;
  L.prefix = fmt::format("q{}", index);
  if (auto r = layout_key(q, L); !r) return std::unexpected(r.error());
  layout_values(q, L);
  layout_event(q, L);
  layout_span(q, L);
  for (const auto& k : q.keys) L.uses_stacks |= k.expr->type.kind == TypeKind::Stack;
  if (q.span)
    for (const auto& c : q.span->captures) L.uses_stacks |= c->type.kind == TypeKind::Stack;
  place_storage(q, L, layout_strings(q, L));
  if (auto r = check_percpu_sizes(q, L); !r) return std::unexpected(r.error());
  return L;
}

namespace {

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
                                &L.scratch})
    if (!s->empty()) out += s->declaration();
  auto declare = [&](MapDecl m, const char* comment = nullptr) {
    maps.push_back(plan_map(m));
    out += map_declaration(d, m);
    out += comment ? fmt::format("  /* {} */\n", comment) : "\n";
  };
  uint32_t max_entries = std::max<uint32_t>(q.max_entries, 1);
  if (!L.val.empty()) {
    if (L.key.empty())
      declare({MapKind::PercpuArray, L.map("vals"), "", L.val.type(), 1, 4, L.val.size()});
    else
      declare({values_map_kind(q), L.map("vals"), L.key.type(), L.val.type(), max_entries,
               L.key.size(), L.val.size()});
  }
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    if (L.hist_maps[i].empty()) continue;
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
  if (q.span && span_in_task_storage(q))
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
    const CMember* m = member(L.key, L.key_members[i]);
    p.keys.push_back(PlanField{q.keys[i].name, value_kind(*q.keys[i].expr), m->offset, m->size,
                               q.keys[i].display, q.keys[i].unit, q.keys[i].symbols,
                               q.keys[i].symbol_flags});
  }
  p.key_size = L.key.empty() ? 0 : L.key.size();
  if (!L.val.empty()) {
    p.value_map = L.map("vals");
    p.value_size = L.val.size();
  }
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    const auto& agg = q.aggregates[i];
    PlanAggregate a;
    a.name = agg.name;
    a.kind = agg.kind;
    a.is_signed = agg.arg && agg.arg->type.is_integer() && agg.arg->type.is_signed;
    if (!L.agg_members[i].empty()) {
      uint32_t offset = member(L.val, L.agg_members[i])->offset;
      (agg.kind == AggKind::Min || agg.kind == AggKind::Max ? a.minmax_offset : a.sum_offset) =
          offset;
    }
    a.map_name = L.hist_maps[i];
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
      const CMember* m = member(L.event, L.event_members[i]);
      p.event_fields.push_back(PlanField{q.stream[i].name, value_kind(*q.stream[i].expr), m->offset,
                                         m->size, q.stream[i].display, q.stream[i].unit,
                                         q.stream[i].symbols, q.stream[i].symbol_flags});
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
