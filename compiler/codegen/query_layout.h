// What is decided about a query before its functions are written: its structs (key, value,
// event, span, scratch), where each string lives, and what stays on the BPF stack. Computed by
// layout_query (query_layout.cpp) under the limits of internal.h; read by every function writer
// and by the Plan's description of the query. Not part of the codegen.h interface.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/check/check.h"
#include "compiler/codegen/layout.h"

namespace bpfql::codegen {

// The kinds of functions a query has: the main one per probe (filters, keys, aggregation or
// streaming; a span's end), a span's begin, and the entry program that stores a return probe's
// `entry.EXPR` values (entry_values.h).
enum class Role { Main = 0, SpanBegin = 1, Entry = 2 };

// Where one string value lives while a function runs.
struct StringHome {
  std::string lvalue;   // "key.comm", "s0", "sc->s0", "args->prev_comm"
  uint32_t size = 0;    // bytes of the array
  bool in_ctx = false;  // a char[] field compared in place in the tracepoint record
  bool member = false;  // a member of the key or event struct (zeroed before it is written);
                        // at a span's begin, of the span value
  bool in_span = false;  // a captured string, in the stored span value: nothing to read
  bool in_event = false;  // report: flow, at a begin: a member of the begin row's event
};

// Everything decided about a query before its functions are written.
struct QueryLayout {
  int index = 0;
  std::string prefix;  // "q0"

  StructLayout key;                        // empty: no keys
  std::vector<std::string> key_members;    // per KeyItem
  StructLayout hkey;                       // { key; u64 slot; }: histograms with keys
  StructLayout val;                        // empty: every aggregate is a histogram
  std::vector<std::string> agg_members;    // per AggregateItem: value member ("" none)
  std::vector<std::string> hist_maps;      // per AggregateItem: own map ("" none)
  StructLayout event;                      // streaming
  std::vector<std::string> event_members;  // per StreamItem
  StructLayout scratch;                    // per-CPU scratch (empty: everything is on the stack)

  // Storage, as C lvalues; the stack ones are declared by the function that uses them.
  std::string key_outer;  // what is zeroed: "key", "hk", "sc->key", "sc->hk"
  std::string key_var;    // the struct qN_key: "key", "hk.k", "sc->key", "sc->hk.k"
  std::string event_var;  // "ev" / "sc->ev"
  std::string zero_var;   // "zero" / "sc->zero": the initial value of a new key
  bool key_on_stack = false;
  bool event_on_stack = false;
  bool zero_on_stack = false;
  std::map<std::string, StringHome> strings[3];  // per Role: canon → home (none at Entry)
  std::set<std::string> stack_buffers[3];        // per Role: buffers declared on the stack

  // Spans: the key (`u64`, or a struct of u64 for a composite key), and the value each begin
  // stores: the begin time alone (`u64`), or a struct {ts, captures} when the end uses
  // `begin.EXPR`.
  StructLayout span_key;                       // empty: one u64
  StructLayout span_val;                       // empty: the begin time alone
  std::vector<std::string> capture_members;    // per CheckedSpan::captures
  std::string span_var;   // at the begin, where the value is built: "sv" / "sc->sv"
  bool span_val_on_stack = false;
  std::string span_key_type() const { return span_key.empty() ? "u64" : span_key.type(); }
  std::string span_val_type() const { return span_val.empty() ? "u64" : span_val.type(); }
  // The stored begin time through the looked-up pointer `sp`.
  std::string span_ts() const { return span_val.empty() ? "*sp" : "sp->ts"; }
  // `nest: true`: the thread's storage, {u32 depth; the begins' values, outermost first}
  // (codegen/span_nest.cpp).
  StructLayout nest;

  bool uses_stacks = false;  // a kstack/ustack key (a stack map)
  // A query keyed by a system call's number alone, with additive aggregates: the numbers below
  // `slots` count in a per-CPU array at their index ("slots" map), the rest in the hash. An array
  // slot is found without hashing the key, and its counters are read as differences, never
  // deleted (runtime/collect/map_reader.h). 0: the hash alone.
  uint32_t slots = 0;
  // Bytes of the event the function zeroes: all but its stacks' addresses, which come last and
  // which bpf_get_stack writes whole (a too large memset is no BPF instruction).
  uint32_t event_zeroed = 0;
  std::string map(const char* what) const { return prefix + "_" + what; }
};

Result<QueryLayout> layout_query(const CheckedQuery& query, int index);

// The event member that says whether a span's end found its begin, with `unmatched: keep`.
inline constexpr const char* kBegunMember = "begun";
// report: flow: the event members that say whether a row is a begin (1) or an end (0), and its
// depth.
inline constexpr const char* kFlowCallMember = "flow_call";
inline constexpr const char* kFlowDepthMember = "flow_depth";

// The span value's member holding capture `i` (CheckedSpan::captures).
inline const CMember* capture_member_at(const QueryLayout& L, size_t i) {
  return i < L.capture_members.size() ? L.span_val.find(L.capture_members[i]) : nullptr;
}

// Bytes a key or event member of this type takes: integers 1/2/4/8, bool 1, strings str_size,
// stacks 4 (a stack id), byte arrays their length.
uint32_t member_size(const Type& t);

}  // namespace bpfql::codegen
