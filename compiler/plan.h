// The Plan: the compiler's only output and the runtime's only input. The generated BPF C plus a
// typed description of every map, event and attach point it defines, so the runtime can load,
// attach and decode without ever looking at the query again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/buckets.h"
#include "compiler/units.h"
#include "compiler/diagnostics.h"

namespace bpfql {

enum class ProbeKind {
  Tracepoint, Kprobe, Kretprobe, Uprobe, Uretprobe, Usdt, Profile, Software, Hardware,
};

// Applied in user space when a value is printed. Ipv4 and Ipv6 are for byte arrays the
// tracepoint's print fmt shows as addresses (%pI4, %pI6); other byte arrays print as hex.
// The rest are name functions (runtime/names.h): signal(), tcp_state(), open_flags(),
// task_state(), ip() of an integer address, cgroup_path(), disk(), softirq(), and symbolic()
// with the tracepoint's own print fmt table (PlanField::symbols), irq() of a hardware IRQ number.
enum class Display {
  None, Syscall, User, Errno, Ksym, Usym, Probe, Ipv4, Ipv6,
  Signal, TcpState, OpenFlags, TaskState, IpInt, CgroupPath, Disk, Softirq, Symbolic, Irq, Capability,
  Flow,  // report: flow: indented by the row's depth after "-> " (a begin) or "<- " (an end)
};

enum class AggKind { Count, Sum, Avg, Min, Max, Stats, Hist, Lhist, Percentile };

// hist(), lhist() and percentile(): bucket counters in maps of their own.
inline bool is_histogram(AggKind k) {
  return k == AggKind::Hist || k == AggKind::Lhist || k == AggKind::Percentile;
}

// The slots of a histogram aggregate's map (compiler/buckets.h); 0 for the other kinds.
inline int histogram_slots(AggKind kind, int64_t lhist_min, int64_t lhist_max, int64_t lhist_step,
                           bool is_signed) {
  switch (kind) {
    case AggKind::Hist:
      return buckets::kHistSlots;
    case AggKind::Lhist:
      return buckets::lhist_slots(lhist_min, lhist_max, lhist_step);
    case AggKind::Percentile:
      return buckets::percentile_slots(is_signed);
    default:
      return 0;
  }
}

struct PlanAttach {
  ProbeKind kind = ProbeKind::Tracepoint;
  std::string function;    // the BPF C function the runtime loads and attaches
  std::string spec;        // the probe as written/expanded: "tracepoint:syscalls:sys_enter_read"
  std::string tracepoint;  // Tracepoint: "category:name"
  std::string binary;      // Uprobe/Uretprobe/Usdt: resolved path
  std::string symbol;      // Kprobe/Kretprobe/Uprobe/Uretprobe: function name
  std::string provider;    // Usdt
  std::string usdt_name;   // Usdt
  int pid = -1;            // Uprobe/Usdt: limit to this process (-1: all)
  uint32_t perf_type = 0;      // Profile/Software/Hardware: PERF_TYPE_*
  uint32_t perf_config = 0;    // PERF_COUNT_*
  uint64_t sample_period = 0;  // one of period / frequency is set
  uint64_t sample_freq = 0;
  bool one_cpu = false;        // Profile: attach on the first online CPU only (interval:D)
  // Tracepoint: the program reads no field of the record and takes no kernel stack, so it can
  // run as a raw tracepoint where the kernel has one of that name (the record is then never
  // built). A kernel stack taken from a raw tracepoint would begin with the BPF program and the
  // tracepoint's own functions.
  bool raw_tracepoint_ok = false;
  // Tracepoint (raw_syscalls): the program reads the raw tracepoint's arguments (the call's
  // registers, its number or return value) in place of the record, so it runs only as the raw
  // tracepoint: no fallback to the ordinary one, whose context is the record.
  bool raw_record = false;
  // Tracepoint: the program takes the `probe` builtin from its BPF cookie
  // (bpf_get_attach_cookie), so one function serves every probe of a wildcard; the runtime
  // attaches it with cookie = probe_index (runtime/load/attach_cookie.h).
  bool attach_cookie = false;
  uint64_t probe_index = 0;
};

// Bytes: a byte array copied from a tracepoint record as it is (no terminating NUL).
enum class ValueKind { Unsigned, Signed, Bool, String, KernelStack, UserStack, Bytes };

// One field of a key struct or an event struct.
struct PlanField {
  std::string name;  // the output column name
  ValueKind kind = ValueKind::Unsigned;
  uint32_t offset = 0;
  uint32_t size = 0;  // integers 1/2/4/8; strings: the char array size; stacks: 4 (a stack id
                      // in the query's stack map) or 8 per address (a streamed event's own);
                      // bytes: the array's length
  Display display = Display::None;
  Unit unit;  // what the number measures (units.h); renderers show it
  // Display::Symbolic: the value → name table from the tracepoint's print fmt
  // (__print_symbolic), or flag bits → names (__print_flags, joined by "|").
  std::vector<std::pair<uint64_t, std::string>> symbols;
  bool symbol_flags = false;
  // A streamed span end's value that exists only when the end found its begin (`duration`,
  // `begin.EXPR`): absent in an event whose PlanQuery::begun_offset byte is 0.
  bool from_begin = false;
};

struct PlanAggregate {
  std::string name;  // the output column name
  AggKind kind = AggKind::Count;
  bool is_signed = false;  // of the aggregated expression

  // Count, Sum, Avg, Min, Max, Stats live in the query's value struct, which always begins with
  // `u64 n` (events seen for the key on that CPU) at offset 0. Count = n; Avg = sum / n;
  // Min/Max: a CPU whose n is 0 holds no value.
  uint32_t sum_offset = 0;     // Sum, Avg, Stats: 8-byte sum (signed if is_signed)
  uint32_t minmax_offset = 0;  // Min, Max: 8-byte value (signed if is_signed)

  // Hist, Lhist, Percentile: a map of their own, per-CPU u64 counters. With group keys it is a
  // per-CPU hash whose key is the query's key struct (key_size bytes) followed by a u64 slot;
  // without keys it is a per-CPU array indexed by slot (buckets.h gives slot counts and bounds).
  std::string map_name;
  int64_t lhist_min = 0;
  int64_t lhist_max = 0;
  int64_t lhist_step = 1;
  std::vector<double> percentiles;  // Percentile: e.g. {50, 99}
  Unit unit;  // of the aggregated value (count(): none)
  // The aggregated expression as written: a percentile is clamped to the min()/max() of the same
  // expression when the query has them.
  std::string arg_text;
};

// A select item computed in user space at print time from aggregates (`sum(duration) / 1000`,
// `count() / $interval`, `rate(count())`): a little stack program over doubles.
struct ComputedOp {
  enum class Kind { Aggregate, Constant, Interval, Add, Sub, Mul, Div, Neg };
  Kind kind = Kind::Constant;
  double value = 0;    // Constant
  int aggregate = -1;  // Aggregate: index into PlanQuery::aggregates
};
struct PlanComputed {
  std::string name;  // the output column name
  std::vector<ComputedOp> program;
  Unit unit;
};

inline int histogram_slots(const PlanAggregate& a) {
  return histogram_slots(a.kind, a.lhist_min, a.lhist_max, a.lhist_step, a.is_signed);
}

// `report: open`: where a key or an aggregate's argument is in an open span's stored value
// (the span value struct, or the bare u64 begin time when nothing is captured).
struct SpanValueSource {
  enum class Kind { None, Field, Age };  // None: count(); Age: print time - begin time (ns)
  Kind kind = Kind::None;
  uint32_t offset = 0;  // Field: in the span value
  uint32_t size = 0;
  bool is_signed = false;
};

struct PlanQuery {
  std::string name;
  std::string description;
  SourceLoc loc;
  std::vector<PlanAttach> attaches;
  std::vector<std::string> probe_names;  // Display::Probe: value i → probe_names[i]
  bool streaming = false;
  std::vector<std::string> columns;  // output column order: key and aggregate names

  // Aggregating queries.
  std::vector<PlanField> keys;  // offsets into the key struct
  uint32_t key_size = 0;        // the key struct's size, a multiple of 8 (0 when no keys)
  std::string value_map;        // per-CPU hash (keys) or per-CPU array of 1 (no keys); "" when
                                // every aggregate is a histogram
  uint32_t value_size = 0;
  // A query keyed by a system call's number alone: the values of the numbers below its size, in
  // a per-CPU array indexed by the number (value_map holds the others); "" when none. The reader
  // turns each slot that counted something into a key of keys[0] (codegen QueryLayout::slots).
  std::string slot_map;
  std::vector<PlanAggregate> aggregates;  // also those only a computed column uses
  std::vector<PlanComputed> computed;

  // Keys dropped because a map was full (and span begins dropped): per-CPU array of 1 u64.
  std::string dropped_map;

  // Streaming queries: a perf buffer of event structs; every event begins with `u64 ts`.
  std::string event_buffer;
  uint32_t event_size = 0;
  std::vector<PlanField> event_fields;  // offsets into the event struct, in select order
  // A span with `unmatched: keep`: the offset of the event's u8 that is 1 when the end found its
  // begin and 0 when it had none (its from_begin fields are then absent, not 0).
  std::optional<uint32_t> begun_offset;
  // `report: flow`: the offsets of the event's u8 that is 1 at a begin row (0 at an end row)
  // and of its u32 depth, which Display::Flow fields are indented by. At a begin row the
  // begun_offset byte is 0: `duration` and `begin.EXPR` are absent there.
  std::optional<uint32_t> flow_call_offset;
  uint32_t flow_depth_offset = 0;
  // Events perf_submit found no room for (the perf buffer was full): per-CPU array of 1 u64,
  // counted in the kernel because the kernel's own lost record waits for the next event.
  std::string lost_map;
  // A span's hash of open begins (key -> begin time and captures); "" when the span lives in
  // task storage or there is none. Counted at exit: the spans that never ended.
  std::string open_span_map;
  uint32_t span_key_size = 0;
  uint32_t span_value_size = 0;
  // `report: open`: the rows are built at each print from the open spans in open_span_map
  // (runtime/collect/open_spans.h), as the value and histogram maps would hold them, laid out
  // by keys, value_size and aggregates (value_map and the histogram map names are then "": the
  // program has no such maps). The begin time is at offset 0 of the span value.
  bool report_open = false;
  std::vector<SpanValueSource> open_keys;  // parallel to keys
  std::vector<SpanValueSource> open_args;  // parallel to aggregates

  std::string stack_map;  // BPF_STACK_TRACE map for KernelStack/UserStack fields ("" if none)
  // Stack ids captured at a span's begin may still be open at a print: never freed then.
  bool keep_stacks = false;

  // Printing.
  std::optional<uint64_t> interval_ns;
  std::optional<uint64_t> stop_after_ns;
  bool cumulative = false;
  std::string order_by;  // a column name; "" = first aggregate
  bool descending = true;
  uint64_t limit = 0;
  uint32_t max_entries = 10240;
};

// A number given when bpfql runs (an int or duration `$param`, `--pid`), not written into the C
// as a literal: the C loads BPFQL_CONST(kRuntimeConstantMagic | slot) (an ld_imm64) and the
// loader writes the value into that instruction. Another value is then the same program, and
// the same program cache entry (a warm start).
struct PlanConstant {
  uint64_t value = 0;
  std::string source;  // what gave it: "$pid", "--pid"
};
inline constexpr uint64_t kRuntimeConstantMagic = 0x9e3779b97f4a0000ULL;  // the slot: low 16 bits
inline constexpr uint64_t kRuntimeConstantSlots = 0x10000;
inline bool is_runtime_constant_marker(uint64_t v) {
  return (v & ~(kRuntimeConstantSlots - 1)) == kRuntimeConstantMagic;
}

// A map of the program, as the kernel is asked to create it (the compiled image names the same
// maps with the same attributes: tests/runtime/compile/plain_compile_test.cpp checks it), so that the
// runtime can create them while the program is being compiled or read (map_precreation.h).
struct PlanMap {
  std::string name;
  uint32_t type = 0;  // enum bpf_map_type
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;  // perf event arrays: 0, one per possible CPU
  uint32_t flags = 0;
};

struct Plan {
  std::string c_source;  // BCC's dialect, for libbcc (what `bpfql compile` prints)
  // The same program in plain C (compiler/codegen/maps.h), which bpfql compiles in one clang pass without
  // kernel headers (runtime/compile/clang_compile.h); "" when the program needs libbcc (USDT, task
  // storage, kprobes and uprobes).
  std::string c_plain;
  std::vector<PlanQuery> queries;
  std::vector<PlanConstant> constants;  // by slot
  std::vector<PlanMap> maps;            // of every query, in declaration order
};

}  // namespace bpfql
