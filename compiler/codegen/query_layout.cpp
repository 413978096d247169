// A query's layout: its key, value, event, span and scratch structs, where each string lives,
// and what stays on the BPF stack (the rest goes to a per-CPU scratch array). Moved out of
// query.cpp, which declares the maps and describes the query to the Plan from this layout.
#include "compiler/codegen/query_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "compiler/check/span_nest.h"
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
  bool flow = q.span && q.span->report_flow;
  bool keeps = q.span && (q.span->keep_unmatched || flow);
  std::set<std::string> taken = {"ts"};
  if (keeps) taken.insert(kBegunMember);
  if (flow) taken.insert({kFlowCallMember, kFlowDepthMember});
  L.event_members = add_members(L.event, exprs, columns, "f", taken, StackMember::Frames);
  // After any stack addresses, so outside what is zeroed: always written.
  if (flow) L.event.append(kFlowDepthMember, "u32", 0, 4, 4, "the row's depth (report: flow)");
  if (keeps)
    L.event.append(kBegunMember, "u8", 0, 1, 1,
                   flow ? "1: an end that found its begin; 0: a begin, or an end without one"
                        : "1: the end found its begin (unmatched: keep)");
  if (flow) L.event.append(kFlowCallMember, "u8", 0, 1, 1, "1: a begin row; 0: an end row");
  L.event.pad_to_multiple(8);
  L.event_zeroed = L.event.size();
  for (size_t i = 0; i < exprs.size(); ++i)
    if (exprs[i]->type.kind == TypeKind::Stack)
      L.event_zeroed = std::min(L.event_zeroed, L.event.find(L.event_members[i])->offset);
}

void layout_span_value(const CheckedQuery& q, QueryLayout& L);

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
  if (!q.span->captures.empty()) layout_span_value(q, L);
  if (!q.span->nest) return;
  uint32_t value_size = L.span_val.empty() ? 8 : L.span_val.size();
  L.nest = StructLayout(L.map("nest"));
  L.nest.append("depth", "u32", 0, 4, 4, "open spans of the thread, deeper ones too");
  L.nest.append("s", L.span_val_type(), kMaxNestDepth, kMaxNestDepth * value_size, 8,
                fmt::format("the begins of the first {} levels, outermost first", kMaxNestDepth));
}

// The value a begin stores: its time and the captures.
void layout_span_value(const CheckedQuery& q, QueryLayout& L) {
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
  // The rules' keys and conditions: an end's run in the main role, a begin's in the begin role.
  std::vector<const Expr*> begin;
  for (size_t j = 0; j < q.span->rules.size(); ++j) {
    bool at_begin = std::ranges::find(q.span->begin_rule, static_cast<int>(j)) !=
                    q.span->begin_rule.end();
    std::vector<const Expr*>& side = at_begin ? begin : exprs;
    const CheckedSpanRule& rule = q.span->rules[j];
    if (rule.key)
      for (const auto& k : *rule.key) side.push_back(k.get());
    if (rule.filters)
      for (const auto& f : *rule.filters) side.push_back(f.get());
  }
  // A captured string: at the begin it is read straight into the span value; at the end it is
  // read from the stored value through `sp`.
  auto& begin_homes = L.strings[static_cast<int>(Role::SpanBegin)];
  std::map<std::string, StringHome> captured;
  for (size_t i = 0; i < q.span->captures.size(); ++i) {
    const Expr& c = *q.span->captures[i];
    std::string canon = string_canon(c);
    if (!c.type.is_string() || canon.empty()) continue;
    const CMember* m = L.span_val.find(L.capture_members[i]);
    if (!begin_homes.count(canon))
      begin_homes[canon] = StringHome{L.span_var + "." + m->name, m->size, false, true, false};
    captured["begin." + canon] = StringHome{"sp->" + m->name, m->size, false, false, true};
  }
  buffers[0] = plan_strings(exprs, main, "s", &captured);
  // report: flow: a begin row's strings are read straight into its event, as at the end.
  for (size_t i = 0; i < q.span->flow_begin_stream.size(); ++i) {
    const Expr* e = q.span->flow_begin_stream[i].get();
    std::string canon = e ? string_canon(*e) : "";
    if (!e || !e->type.is_string() || canon.empty() || begin_homes.count(canon)) continue;
    StringHome home{L.event_members[i], L.event.find(L.event_members[i])->size, false, true};
    home.in_event = true;
    begin_homes[canon] = home;
  }
  for (const auto& f : q.span->flow_begin_filters) begin.push_back(f.get());
  for (const auto& s : q.span->flow_begin_stream)
    if (s) begin.push_back(s.get());
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
  // A span's begin is a function of its own, except where a probe both ends and begins a span:
  // both parts are inlined into one program, which has one stack.
  Placement begin_stack;
  bool one_function = q.span && std::any_of(q.probes.begin(), q.probes.end(),
                                            [&](const ProbeRef& p) { return also_begins(q, p); });
  Placement& begin_budget = one_function ? stack : begin_stack;
  if (!L.event.empty()) {
    // report: flow: the begin writes a row too, on its own stack.
    bool begin_row = q.span && q.span->report_flow;
    L.event_on_stack = stack.place(L.event.size()) &&
                       (!begin_row || begin_budget.place(L.event.size()));
    if (!L.event_on_stack) L.scratch.append("ev", L.event.type(), 0, L.event.size(), 8);
    L.event_var = L.event_on_stack ? "ev" : "sc->ev";
  }
  if (!L.val.empty() && !L.key.empty()) {
    L.zero_on_stack = stack.place(L.val.size());
    if (!L.zero_on_stack)
      L.scratch.append("zero", L.val.type(), 0, L.val.size(), 8, "never written: stays zero");
    L.zero_var = L.zero_on_stack ? "zero" : "sc->zero";
  }
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
      if (home.member && !home.in_event) home.lvalue = "sc->" + home.lvalue;
    L.span_var = "sc->sv";
  }
  for (auto& [canon, home] : L.strings[static_cast<int>(Role::SpanBegin)])
    if (home.in_event) home.lvalue = L.event_var + "." + home.lvalue;
  for (auto& [canon, home] : L.strings[static_cast<int>(Role::Main)]) {
    if (!home.member) continue;
    home.size = (q.streaming() ? L.event : L.key).find(home.lvalue)->size;
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

// A thread's stack of nested spans is one task-storage value, which the kernel caps just under
// 64 KiB (BPF_LOCAL_STORAGE_MAX_VALUE_SIZE: U16_MAX less its own header).
constexpr uint32_t kMaxTaskStorageValue = 65535 - 256;

Result<void> check_nest_size(const CheckedQuery& q, const QueryLayout& L) {
  if (L.nest.empty() || L.nest.size() <= kMaxTaskStorageValue) return {};
  return error_at(q.loc, fmt::format("the nested spans of query '{}' take {} bytes per thread "
                                     "({} levels of {} bytes: the begin time and the captures); "
                                     "a thread's storage holds at most {} (capture fewer strings "
                                     "or lower `strlen`)",
                                     q.name, L.nest.size(), kMaxNestDepth,
                                     L.span_val.empty() ? 8 : L.span_val.size(),
                                     kMaxTaskStorageValue));
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
    case TypeKind::Kernel:  // a place, not a value: the checker never lets one be stored
      break;
  }
  return 8;
}

namespace {

// QueryLayout::slots: enough for every x86_64 and i386 system call number (the highest is below
// 470); a larger one (an x32 call, a number no kernel has) goes to the hash.
constexpr uint32_t kSyscallSlots = 512;

uint32_t syscall_slots(const CheckedQuery& q, const QueryLayout& L) {
  if (q.streaming() || q.span || q.keys.size() != 1 || L.key.empty() || L.val.empty()) return 0;
  const KeyItem& k = q.keys[0];
  if (k.display != Display::Syscall || !k.expr->type.is_integer()) return 0;
  for (const auto& a : q.aggregates)
    if (a.kind != AggKind::Count && a.kind != AggKind::Sum && a.kind != AggKind::Avg) return 0;
  return kSyscallSlots;
}

}  // namespace

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
  L.slots = syscall_slots(q, L);
  if (auto r = check_percpu_sizes(q, L); !r) return std::unexpected(r.error());
  if (auto r = check_nest_size(q, L); !r) return std::unexpected(r.error());
  return L;
}

}  // namespace bpfql::codegen
