// The checker: resolves probes and names against the KernelCatalog, type-checks every
// expression, and sorts select items into keys, aggregates or streamed values. Its output is
// everything code generation needs; code generation never sees YAML or the catalog.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/syntax/ast.h"
#include "compiler/check/catalog.h"
#include "compiler/plan.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// One attach point after resolution (a tracepoint wildcard becomes one ProbeRef per match).
struct ProbeRef {
  ProbeKind kind = ProbeKind::Tracepoint;
  std::string spec;  // canonical: "tracepoint:syscalls:sys_enter_read", "uprobe:/bin/x:main"
  SourceLoc loc;
  std::optional<TracepointFormat> format;  // Tracepoint
  std::string binary;                      // Uprobe/Uretprobe/Usdt: resolved path
  std::string symbol;                      // Kprobe/Kretprobe/Uprobe/Uretprobe
  std::string provider;                    // Usdt
  std::string usdt_name;                   // Usdt
  std::vector<int> usdt_arg_sizes;         // Usdt: negative = signed
  uint32_t perf_type = 0;                  // Profile/Software/Hardware
  uint32_t perf_config = 0;
  uint64_t sample_period = 0;
  uint64_t sample_freq = 0;
  bool one_cpu = false;                    // Profile: interval:D, a timer on one CPU only

  bool is_return() const { return kind == ProbeKind::Kretprobe || kind == ProbeKind::Uretprobe; }
};

// A `group_by` item (or a plain select item that names one).
struct KeyItem {
  std::string name;
  ExprPtr expr;  // typed; display functions already stripped
  Display display = Display::None;
  SourceLoc loc;
  Unit unit;
  std::vector<std::pair<uint64_t, std::string>> symbols;  // Display::Symbolic
  bool symbol_flags = false;
};

struct AggregateItem {
  std::string name;
  AggKind kind = AggKind::Count;
  ExprPtr arg;  // typed integer expression; null for count()
  int64_t lhist_min = 0;
  int64_t lhist_max = 0;
  int64_t lhist_step = 1;
  std::vector<double> percentiles;
  SourceLoc loc;
  Unit unit;
};

// A plain select item of a streaming query (no aggregates): one value per event.
struct StreamItem {
  std::string name;
  ExprPtr expr;
  Display display = Display::None;
  SourceLoc loc;
  Unit unit;
  std::vector<std::pair<uint64_t, std::string>> symbols;  // Display::Symbolic
  bool symbol_flags = false;
};

// A begin or end item of a span written with its own key or where (SpanProbeRule), typed at
// the probes it resolved to.
struct CheckedSpanRule {
  std::optional<std::vector<ExprPtr>> key;      // nullopt: the side's shared key
  std::optional<std::vector<ExprPtr>> filters;  // begin: instead of begin_filters; end: added
};

// A span: begin events store key → (begin time, captured values); end events look their key up.
struct CheckedSpan {
  std::vector<ProbeRef> begin;
  std::vector<ExprPtr> begin_key;      // typed at the begin probes; default `tid`
  std::vector<ExprPtr> end_key;        // typed at the end probes; as many, paired in order
  std::vector<ExprPtr> begin_filters;  // ANDed, evaluated at begin
  std::vector<CheckedSpanRule> rules;  // the items with their own key or where
  std::vector<int> begin_rule;         // per begin probe: its index in `rules`, or -1 (shared)
  std::vector<int> end_rule;           // per end probe (CheckedQuery::probes), the same
  // The values `begin.EXPR` the end uses, distinct by their text (typed at the begin probes).
  // `begin.ts` is the stored begin time itself and takes no slot.
  std::vector<ExprPtr> captures;
  // `unmatched: keep` in effect (span_unmatched.h): an end whose key has no open span is
  // recorded too, without `duration` and captures.
  bool keep_unmatched = false;
  // `report: open`: the rows are the spans still open, read from their hash (never thread
  // storage) at each print; the end only consumes.
  bool report_open = false;
  // `nest: true` (span_nest.h): the thread's spans nest like calls, in a per-thread stack of
  // begins (keyed by tid only); `depth` is a span's level.
  bool nest = false;
  // `report: flow`: a streamed row for every begin too, its select items and `where` evaluated
  // at the begin probe: `flow_begin_stream[i]` is q.stream[i] typed there (null: a value that
  // reads the stored begin, `duration` or `begin.`, absent at a begin row), and
  // `flow_begin_filters` the query's `where` typed there.
  bool report_flow = false;
  std::vector<ExprPtr> flow_begin_stream;
  std::vector<ExprPtr> flow_begin_filters;

  // The slot of a capture's inner expression; -1 for begin.ts.
  int capture_slot(const Expr& inner) const;
  bool composite() const { return begin_key.size() > 1; }
  // What begin probe `k` (end probe `k`) keys by and filters on: its rule's, or the shared ones.
  const std::vector<ExprPtr>& begin_key_at(size_t k) const;
  const std::vector<ExprPtr>& begin_filters_at(size_t k) const;
  const std::vector<ExprPtr>& end_key_at(size_t k) const;
  const std::vector<ExprPtr>* end_filters_at(size_t k) const;  // null: only the query's where
  // Every key of the span (the shared ones and the rules'), for whole-span facts.
  std::vector<const std::vector<ExprPtr>*> all_keys() const;
};

// `begin.ts`: the begin time, which every span stores anyway.
bool is_begin_time(const Expr& inner);

// Where task_struct keeps what `ppid` reads, from the running kernel's BTF.
struct TaskOffsets {
  int real_parent = 0;  // task_struct.real_parent (a pointer)
  int tgid = 0;         // task_struct.tgid
  int comm = 0;         // task_struct.comm (char[16]), for pcomm
};

// Where struct pt_regs keeps what a raw_syscalls raw tracepoint's program reads in place of the
// record (compiler/codegen/fusion.h): the six argument registers of a 64-bit system call, in
// order (x86_64: di, si, dx, r10, r8, r9), and orig_ax, its number at the exit.
struct SyscallRegs {
  std::array<int, 6> args{};
  int nr = 0;
};

struct CheckedQuery {
  std::string name;
  std::string description;
  SourceLoc loc;
  std::vector<ProbeRef> probes;       // for a span: the end probes
  std::optional<CheckedSpan> span;
  std::vector<ExprPtr> filters;       // ANDed conjuncts (top-level && split apart), typed
  std::vector<KeyItem> keys;          // group_by order
  std::vector<AggregateItem> aggregates;  // select order (then those only computed items use)
  std::vector<PlanComputed> computed;     // select items over aggregates, computed at print
  std::vector<StreamItem> stream;     // non-empty exactly when the query streams
  std::vector<std::string> columns;   // output order: select order, unselected keys first
  std::optional<uint64_t> interval_ns;
  std::optional<uint64_t> stop_after_ns;
  bool cumulative = false;
  std::string order_by;               // "" = first aggregate
  bool descending = true;
  uint64_t limit = 0;
  uint32_t max_entries = 10240;
  uint32_t strlen = 64;
  int pid = -1;                       // --pid or `pid:`; -1 = any
  // -c: `pid` is the command bpfql started, and its descendants count too: the program keeps
  // their pids in a map, following forks (sched_process_fork/exit, `tree_probes`).
  bool pid_tree = false;
  // A span's sides that filter on `pid` (compiler/check/pid_sides.h): those whose probes run in
  // the task the span is about.
  bool pid_at_begin = true;
  bool pid_at_end = true;
  std::vector<ProbeRef> tree_probes;
  // `entry.EXPR` at return probes (entry_values.h): the values the calls' entries store, distinct
  // by their text, typed at the entry probes.
  std::vector<ExprPtr> entry_values;
  std::optional<TaskOffsets> task_offsets;  // set when an expression uses ppid or pcomm
  // Where task_struct keeps thread_info.status (TS_COMPAT: the thread is in a 32-bit system
  // call), from the running kernel's BTF; set when a probe is a syscalls:* tracepoint, whose
  // body may then run in the program on raw_syscalls:sys_enter/sys_exit (fusion.h), which must
  // leave out the 32-bit calls that syscalls:* never sees.
  std::optional<int> syscall_compat_offset;
  // From the running kernel's BTF, set when a probe is a syscalls:* or raw_syscalls:*
  // tracepoint: its body may then run in a raw tracepoint program on raw_syscalls, which reads
  // the system call's registers where the record would have held them (fusion.h).
  std::optional<SyscallRegs> syscall_regs;
  // What the checker decided that is no error but may surprise: the fields `select: "*"` left
  // out, and why. `bpfql check -v` prints them.
  std::vector<Diagnostic> notes;
  // What is valid but probably not what the user means (a span keyed by pid across tracepoints
  // that run in different tasks): printed on every run and check.
  std::vector<Diagnostic> warnings;

  bool streaming() const { return !stream.empty(); }
};

struct CheckedProgram {
  std::vector<CheckedQuery> queries;
};

struct CheckOptions {
  std::optional<int> pid;                 // --pid, or -c's command
  bool pid_tree = false;                  // -c: `pid` and every process it starts
  std::optional<uint64_t> interval_ns;    // --interval (overrides every query's)
  std::optional<uint64_t> stop_after_ns;  // --stop-after
};

// Parses and checks every query of a loaded file whose params are bound (bind_params).
Result<CheckedProgram> check_file(const QueryFile& file, const KernelCatalog& catalog,
                                  const CheckOptions& options);

}  // namespace bpfql
