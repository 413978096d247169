// Writes one BPF C function: a query's program for one probe (or a span's begin). Statements come
// in cost order — cheap integer filters, then string reads and the filters that need them, then
// the key or event, then the map updates — and every helper result and string is computed once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/internal.h"

namespace bpfql::codegen {

struct ProbeEnv {
  const ProbeRef* probe = nullptr;
  int index = 0;  // the value of the `probe` builtin
  Role role = Role::Main;
  std::string function;  // "q0_p0"
  std::string ctx;       // "args" (tracepoints) or "ctx"
  const TracepointStruct* tracepoint = nullptr;
  // A span's end probe that is also one of its begin probes (the index among them), else -1:
  // the function ends a span, then begins one.
  int begin_index = -1;
  bool inline_part = false;  // written as a static inline part of another function
  // Written for a raw_syscalls raw tracepoint (ctx "ctx"), reading through query.syscall_regs.
  // A body of syscalls:* written so reads 64-bit registers: it runs only behind fusion.h's tests.
  RawSyscall raw_syscall = RawSyscall::None;
};

// A C integer or boolean expression and the C type of its text.
struct CValue {
  std::string text;
  Type type;                   // the type the text has in C (a bool is 0 or 1)
  bool small_literal = false;  // a constant in 0..INT_MAX: converts implicitly to any type
};

// A string in memory the function can index with constants.
struct CString {
  std::string lvalue;
  uint32_t size = 0;
  bool aligned = true;  // starts at a multiple of 8: can be compared a word at a time
};

class FunctionGen {
 public:
  FunctionGen(const CheckedQuery& query, const QueryLayout& layout, ProgramState& program,
              ProbeEnv env);

  // The whole function, starting with a comment naming the query and its line.
  Result<std::string> generate();
  // After generate(): whether the function can run as a raw tracepoint (which the kernel calls
  // without building the record): it reads no field of the record and takes no kernel stack.
  // A cookie is given to a raw tracepoint only by kernels from 6.10: such a function attaches as
  // a tracepoint.
  bool raw_tracepoint_ok() const { return !reads_record_ && !kernel_stack_ && !uses_attach_cookie_; }
  // After generate() of a function written for a raw_syscalls raw tracepoint (ProbeEnv): whether
  // every field it reads was found in the tracepoint's arguments or registers, so it can run
  // there. A field with no such place (common_pid, raw_syscalls' args[], whose registers differ
  // in a 32-bit call) makes the text unusable: the function then keeps the record.
  bool raw_syscall_ok() const {
    return !raw_unreadable_ && !kernel_stack_ && !uses_attach_cookie_;
  }
  // After generate(): the function takes `probe` from its BPF cookie (PlanAttach::attach_cookie).
  bool uses_attach_cookie() const { return uses_attach_cookie_; }
  // After generate(): two functions of a query with equal keys are the same program, so one is
  // loaded and attached to both probes (a wildcard over 360 syscalls: one compile and one
  // verifier run, not 360). The key holds all the program depends on: its role, probe kind and
  // program type, its statements, and the layout of the record where it reads one (a
  // tracepoint's struct, its name left out). The `probe` builtin makes keys differ.
  std::string sharing_key() const;
  // After generate(): the statements of the function's body, each indented, without the final
  // `return 0;` (compiler/codegen/fusion.h runs several queries' bodies in one program).
  const std::vector<std::string>& body_lines() const { return lines_; }

 private:
  // Statements (function.cpp).
  Result<void> emit_main();
  Result<void> emit_span_begin();
  // After the begin's task storage get: no slot (creating it failed) counts a dropped span and
  // leaves.
  void emit_no_slot_exit(const std::string& slot);
  Result<void> emit_span_lookup();
  Result<void> emit_span_find();
  std::string span_found() const;
  std::string span_missing() const;
  void emit_duration();
  void emit_span_consume();
  std::string span_consume() const;
  Result<void> emit_span_value();
  void ensure_span_value_zeroed();
  const CMember* capture_member(const Capture& c) const;
  Result<CValue> capture(const Expr& e, const Capture& c);
  std::string body_text(const std::string& signature_text) const;
  Result<std::string> generate_with_begin();
  Result<void> emit_pid_filter();
  Result<void> emit_filters(const std::vector<ExprPtr>& filters);
  Result<void> emit_key();
  Result<void> emit_event();
  // Which of a streamed event's members to write: all, or those that read the stored begin
  // (`duration`, `begin.`) or those that do not.
  enum class EventPart { All, FromEnd, FromBegin };
  Result<void> emit_event_members(EventPart part);
  void emit_event_submit(const std::string& indent = "");
  Result<void> emit_member(const Expr& e, const std::string& lvalue, uint32_t size);
  Result<void> emit_update();
  bool counts_events() const;  // the value's n is incremented (emit_update)
  Result<void> emit_aggregate(const AggregateItem& agg, size_t i);
  Result<void> emit_histogram(const AggregateItem& agg, size_t i);
  Result<std::string> span_key_value(const std::vector<ExprPtr>& key);
  void ensure_scratch();
  void ensure_key_zeroed();
  bool key_written_whole() const;
  void ensure_event_zeroed();
  void zero_in_pieces(const std::string& lvalue, uint32_t bytes);
  void ensure_zero_value();

  // `entry.EXPR` (entry_values.cpp): the entry program's store, the return's lookup, a value.
  Result<void> emit_entry_store();
  Result<void> emit_entry_load();
  Result<CValue> entry_value(const Expr& e, const EntryValue& v);

  // A span's end under `unmatched: keep`: ends without a begin recorded too (span_unmatched.cpp).
  Result<void> emit_span_end_keeping();

  // `nest: true`: a per-thread stack of begins; `report: flow` rows (span_nest.cpp).
  Result<void> emit_nest_begin();
  Result<void> emit_nest_end();
  Result<void> emit_nest_end_event();
  Result<void> emit_flow_begin_row();
  void emit_flow_marks(bool call, const std::string& indent = "");

  // Integer and boolean expressions (expr.cpp).
  Result<CValue> value(const Expr& e);
  Result<CValue> typed_value(const Expr& e);  // cast to the checker's type where it differs
  Result<std::string> condition(const Expr& e);
  Result<CValue> builtin(const Expr& e, const BuiltinRef& b);
  Result<CValue> field(const Expr& e, const FieldRef& f);
  Result<CValue> unary(const Expr& e, const Unary& u);
  Result<CValue> binary(const Expr& e, const Binary& b);
  Result<CValue> compare(BinaryOp op, const Expr& lhs, const Expr& rhs);
  Result<CValue> in_list(const Expr& e, const InList& in);
  Result<CValue> call(const Expr& e, const Call& c);
  Result<CValue> argument(const Expr& e, int index);
  Result<CValue> emit_ppid(const Expr& e);
  Result<void> emit_parent_task(const Expr& e);

  // Kernel and user memory through BTF offsets (codegen_memory.cpp).
  // A u64 C expression: where `e` lives; `guard` collects the bound checks of variable indexes
  // on the way (empty: none), which must hold for the address to be read.
  Result<std::string> address_of(const Expr& e, std::string& guard);
  Result<std::string> element_address(const Index& ix, const std::string& base,
                                      std::string& guard);
  Result<CValue> memory_value(const Expr& e);     // a member or element, read into a local
  Result<CValue> record_element(const Expr& e, const Index& ix);  // `args.ARR[N]`
  Result<CValue> record_element_chosen(const Expr& e, const Index& ix,
                                       const TracepointField& tf);  // `args.ARR[I]`
  Result<CValue> cast_value(const Expr& e, const Cast& c);
  Result<CValue> conditional_value(const Expr& e, const Conditional& c);
  Result<void> read_memory_string(const Expr& e, const std::string& dest);
  Result<void> read_joined(const Expr& e, const Call& c, const std::string& dest, uint32_t size);
  std::string read_into_local(const std::string& key, const std::string& c_type, int size,
                              const std::string& address, bool user, const std::string& note);
  std::string cached(const std::string& name, const std::string& decl);
  // A u64 the loader writes in at run time (plan.h: PlanConstant); `source` says what gave it.
  CValue runtime_constant(uint64_t value, const std::string& source);
  const TracepointField* format_field(const std::string& name) const;
  std::string record_field(const std::string& name);  // "args->name"; notes the record is read
  std::optional<std::string> raw_syscall_field(const std::string& name);  // in a raw program
  CValue record_value(const std::string& name, const Type& t, const std::string& load);

  // Strings (strings.cpp).
  Result<CString> string_value(const Expr& e, bool indexed);
  Result<void> read_string(const Expr& e, const StringHome& home);
  Result<void> read_field_string(const Expr& e, const FieldRef& f, const std::string& dest,
                                 uint32_t size);
  Result<std::string> string_equal(const Expr& lhs, const Expr& rhs);
  Result<std::string> literal_difference(const Expr& s, const std::string& bytes, bool in_list);
  Result<std::string> string_in_list(const Expr& value, const std::vector<ExprPtr>& items);
  Result<std::string> string_startswith(const Expr& s, const std::string& prefix);
  Result<std::string> string_contains(const Expr& s, const std::string& needle);
  Result<void> store_literal(const std::string& lvalue, uint32_t size, const std::string& bytes);

  // Byte arrays (bytes.cpp).
  Result<std::string> byte_field(const Expr& e);
  Result<void> copy_bytes(const Expr& e, const std::string& lvalue, uint32_t size);
  Result<std::string> bytes_equal(const Expr& lhs, const Expr& rhs);

  void line(const std::string& text);
  bool once(const std::string& tag);
  std::string fresh(const char* stem);
  Diagnostic unsupported(const Expr& e, const std::string& what) const;

  const CheckedQuery& query_;
  const QueryLayout& layout_;
  ProgramState& program_;
  Dialect dialect() const { return program_.dialect; }
  ProbeEnv env_;
  std::vector<std::string> lines_;
  std::set<std::string> done_;
  int counter_ = 0;
  bool reads_record_ = false;
  bool kernel_stack_ = false;
  bool uses_attach_cookie_ = false;
  bool raw_unreadable_ = false;  // read a field a raw_syscalls raw tracepoint has no place for
  std::map<std::string, std::string> memory_locals_;  // read key → local holding the value
  std::string begin_part_key_;  // the sharing key of the begin part (generate_with_begin)
};

}  // namespace bpfql::codegen
