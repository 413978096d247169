// Shared between the code generator's files: the program-wide state (prologue needs, tracepoint
// structs), the limits storage is placed under, and the analysis of which strings an expression
// reads; each query's layout is in query_layout.h. Not part of the codegen.h interface.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/check/check.h"
#include "compiler/codegen/helpers.h"
#include "compiler/codegen/layout.h"
#include "compiler/codegen/maps.h"
#include "compiler/codegen/query_layout.h"
#include "compiler/codegen/tracepoint.h"
#include "compiler/plan.h"

namespace bpfql::codegen {

// Largest struct kept on the BPF stack, and the stack all of a function's locals may take; the
// rest goes to a per-CPU scratch array. The kernel allows 512 bytes, LLVM needs room to spill.
inline constexpr uint32_t kMaxStackItem = 128;
inline constexpr uint32_t kStackBudget = 256;
// The kernel refuses hash keys larger than its stack.
inline constexpr uint32_t kMaxMapKey = 512;
// The largest memset (or struct copy) LLVM's BPF backend writes as stores: 128 of them, 8 bytes
// each in our 8-byte aligned structs. A larger one becomes a call, which BPF does not have.
inline constexpr uint32_t kMaxInlineMemset = 1024;
static_assert(kMaxMapKey <= kMaxInlineMemset && kMaxStackItem <= kMaxInlineMemset,
              "keys and the values on the stack are zeroed in one memset");
// The value of a per-CPU map (the scratch array, grouped values) holds at most PCPU_MIN_UNIT_SIZE
// bytes; a larger one fails map creation with E2BIG. A streamed event, built in the scratch,
// stays well under the perf buffer's 64 KiB record limit.
inline constexpr uint32_t kMaxPercpuValue = 32768;
// Histograms with keys: entries per map at most (allocated on use, BPF_F_NO_PREALLOC).
inline constexpr uint64_t kMaxHistEntries = 1000000;
// Distinct stacks a query can hold between two prints (a print frees those it read); as
// bpftrace's default.
inline constexpr uint32_t kStackTraceEntries = 4096;
static_assert((kStackTraceEntries & (kStackTraceEntries - 1)) == 0,
              "a stack trace map's size is a power of two");
// A streamed event carries its stacks' addresses itself (bpf_get_stack), up to the kernel's
// PERF_MAX_STACK_DEPTH: no stack map, so nothing to free and nothing that fills up.
inline constexpr uint32_t kStreamStackFrames = 127;

// Which raw_syscalls raw tracepoint a function is written for (fusion.h), or none. There the
// kernel builds no record: the program is handed the system call's struct pt_regs and its number
// (sys_enter) or return value (sys_exit), and reads the registers where the record held them.
enum class RawSyscall { None, Enter, Exit };

struct ProgramState {
  Dialect dialect = Dialect::Bcc;
  std::set<CHelper> helpers;
  bool needs_ptrace = false;                            // struct pt_regs: kprobes, uprobes, USDT
  bool needs_perf_event = false;                        // profile, software, hardware
  std::map<std::string, TracepointStruct> tracepoints;  // by "category:name"
  std::vector<std::string> tracepoint_order;            // first use first
  std::set<std::string> tracepoints_used;  // by a function the program keeps (not a shared one)
  std::set<std::string> tracepoint_tags;
  std::vector<PlanConstant> constants;  // run-time constants, by slot (plan.h)
  std::vector<PlanMap> maps;            // every map declared, in order
};

// A span keyed by the thread (the default `tid`) keeps its begin time in task-local storage: no
// hash lookup, insert and delete per span (bpftrace and hand-written tools use a hash keyed by
// tid), and the slot goes away when the thread exits. Other keys use a hash of max_entries.
bool span_in_task_storage(const CheckedQuery& q);

// Whether `probe` is one of the span's begin probes too: its function ends a span, then begins
// one (two inline parts in one program, in that order).
bool also_begins(const CheckedQuery& q, const ProbeRef& probe);

// Whether an end expression reads the stored begin (`duration`, `begin.EXPR`): such filters run
// after the lookup, the others before it.
bool reads_span(const Expr& e);

// A string an expression reads: canonical name (equal for the same bytes), and whether it is
// indexed with a variable (contains(), string == string), which a record in place cannot be.
struct StringUse {
  std::string canon;
  const Expr* expr = nullptr;
  uint32_t size = 0;
  bool indexed = false;
};

// "comm", "args.filename", "str(arg1,65)"; "" for a literal.
std::string string_canon(const Expr& e);
// Every non-literal string `e` reads, merged into `out` by canonical name.
void collect_strings(const Expr& e, std::vector<StringUse>& out);

// The maps and shared declarations of a query (structs, maps, its drop counter).
// Appends each map it declares to `maps`.
std::string query_declarations(const CheckedQuery& query, const QueryLayout& layout,
                               Dialect dialect, std::vector<PlanMap>& maps);

// The Plan's description of a query (attaches are filled by the caller).
PlanQuery plan_query(const CheckedQuery& query, const QueryLayout& layout);

// What the runtime needs to print a value of this type.
ValueKind value_kind(const Expr& e);

}  // namespace bpfql::codegen
