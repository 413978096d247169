#include "compiler/codegen/function.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "compiler/buckets.h"
#include "compiler/codegen/c_names.h"
#include "compiler/codegen/entry_values.h"
#include "compiler/codegen/fusion.h"
#include "compiler/codegen/process_tree.h"
#include "compiler/check/span.h"
#include "compiler/syntax/ast_walk.h"

namespace bpfql::codegen {
namespace {

// True when `text` is one parenthesized group "( ... )" or a plain name.
bool is_unit(const std::string& text) {
  if (text.empty()) return false;
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
    return true;
  if (text.front() != '(' || text.back() != ')') return false;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < text.size()) return false;
  }
  return true;
}

// "!(x == 1)" for "(x == 1)", "!found0" for "found0", "(x == 1)" for "(!(x == 1))".
std::string negate(const std::string& cond) {
  if (cond.size() > 3 && cond.compare(0, 2, "(!") == 0 && is_unit(cond)) {
    std::string inner = cond.substr(2, cond.size() - 3);
    if (is_unit(inner)) return inner;
  }
  return is_unit(cond) ? "!" + cond : "!(" + cond + ")";
}

// The relative cost of the string reads of a filter: the helper-free ones first, searches last.
int read_cost(const std::vector<StringUse>& uses) {
  int cost = 0;
  for (const auto& use : uses) {
    StringSource src = use.expr->type.source;
    cost += src == StringSource::Comm || src == StringSource::CharArray ? 1 : 4;
    if (use.indexed) cost += 4;
  }
  return cost;
}

bool attach_filters_pid(ProbeKind kind) {
  return kind == ProbeKind::Uprobe || kind == ProbeKind::Uretprobe || kind == ProbeKind::Usdt;
}

std::string signature(const ProbeEnv& env, Dialect dialect) {
  std::string name = env.inline_part          ? "static __always_inline int " + env.function
                     : dialect == Dialect::Bcc ? "int " + env.function
                                               : "BPFQL_FUNCTION(" + env.function + ")";
  switch (env.probe->kind) {
    case ProbeKind::Tracepoint:
      if (env.raw_syscall != RawSyscall::None)
        return fmt::format("{}({} *ctx)", name, raw_syscalls_context(env.raw_syscall == RawSyscall::Enter));
      return fmt::format("{}(struct {} *args)", name, env.tracepoint->tag);
    case ProbeKind::Profile:
    case ProbeKind::Software:
    case ProbeKind::Hardware:
      return fmt::format("{}(struct bpf_perf_event_data *ctx)", name);
    default:
      return fmt::format("{}(struct pt_regs *ctx)", name);
  }
}

}  // namespace

FunctionGen::FunctionGen(const CheckedQuery& query, const QueryLayout& layout,
                         ProgramState& program, ProbeEnv env)
    : query_(query), layout_(layout), program_(program), env_(std::move(env)) {}

void FunctionGen::line(const std::string& text) { lines_.push_back("  " + text); }
bool FunctionGen::once(const std::string& tag) { return done_.insert(tag).second; }
std::string FunctionGen::fresh(const char* stem) { return fmt::format("{}{}", stem, counter_++); }

std::string FunctionGen::body_text(const std::string& signature_text) const {
  std::string out = signature_text + " {\n";
  for (const auto& l : lines_) out += l + "\n";
  return out + "  return 0;\n}\n";
}

Result<std::string> FunctionGen::generate() {
  if (env_.begin_index >= 0) return generate_with_begin();
  auto r = env_.role == Role::Main        ? emit_main()
           : env_.role == Role::SpanBegin ? emit_span_begin()
                                          : emit_entry_store();
  if (!r) return std::unexpected(r.error());
  const SourceLoc& loc = query_.loc;
  std::string out = fmt::format("/* query '{}' ({}:{}){}: {} */\n",
                                c_names::comment_text(query_.name), c_names::comment_text(loc.file),
                                loc.line,
                                env_.role == Role::SpanBegin ? ", span begin"
                                : env_.role == Role::Entry   ? ", entry values"
                                                             : "",
                                c_names::comment_text(env_.probe->spec));
  return out + body_text(signature(env_, dialect()));
}

// A probe that both ends and begins a span: the end part runs first, so an event never ends
// the span it begins itself, and a begin is stored only after the end has read the previous one.
Result<std::string> FunctionGen::generate_with_begin() {
  ProbeEnv end_env = env_;
  end_env.begin_index = -1;
  end_env.inline_part = true;
  end_env.function = env_.function + "_end";
  ProbeEnv begin_env = end_env;
  begin_env.role = Role::SpanBegin;
  begin_env.index = env_.begin_index;
  begin_env.function = env_.function + "_begin";
  FunctionGen end(query_, layout_, program_, end_env);
  auto end_text = end.generate();
  if (!end_text) return end_text;
  FunctionGen begin(query_, layout_, program_, begin_env);
  auto begin_text = begin.generate();
  if (!begin_text) return begin_text;
  reads_record_ = end.reads_record_ || begin.reads_record_;
  kernel_stack_ = end.kernel_stack_ || begin.kernel_stack_;
  lines_ = end.lines_;
  begin_part_key_ = begin.sharing_key();
  const SourceLoc& loc = query_.loc;
  std::string out = *end_text + "\n" + *begin_text + "\n";
  out += fmt::format("/* query '{}' ({}:{}): {}: ends a span, then begins one */\n",
                     c_names::comment_text(query_.name), c_names::comment_text(loc.file), loc.line,
                     c_names::comment_text(env_.probe->spec));
  out += signature(env_, dialect()) + " {\n";
  out += fmt::format("  {}({});\n", end_env.function, env_.ctx);
  out += fmt::format("  {}({});\n", begin_env.function, env_.ctx);
  return out + "  return 0;\n}\n";
}

std::string FunctionGen::sharing_key() const {
  const ProbeRef& probe = *env_.probe;
  std::string key = fmt::format("role {} kind {} raw {}\n", static_cast<int>(env_.role),
                                static_cast<int>(probe.kind), raw_tracepoint_ok());
  std::string body;
  for (const auto& l : lines_) body += l + "\n";
  if (probe.kind == ProbeKind::Tracepoint && env_.tracepoint) {
    // syscalls' events load as tracepoint programs, others as raw ones (runtime program_type_of).
    key += probe.format && probe.format->category == "syscalls" ? "syscalls\n" : "other\n";
    const std::string& tag = env_.tracepoint->tag;
    if (reads_record_ || body.find(tag) != std::string::npos) {
      auto without = [](std::string text, const std::string& name) {
        for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at))
          text = text.substr(0, at) + "T" + text.substr(at + name.size());
        return text;
      };
      auto untagged = [&](std::string text) { return without(std::move(text), tag); };
      // The declaration names the struct, and the tracepoint in its comment.
      std::string named = probe.format ? probe.format->category + ":" + probe.format->name : tag;
      key += without(untagged(env_.tracepoint->declaration), named) + "\n";
      body = untagged(std::move(body));
    }
  }
  return key + body + begin_part_key_;
}

Result<void> FunctionGen::emit_main() {
  if (query_.span && query_.span->nest) return emit_nest_end();
  if (!query_.span || query_.pid_at_end)
    if (auto r = emit_pid_filter(); !r) return r;
  if (function_reads_entry(query_, Role::Main, static_cast<size_t>(env_.index)))
    if (auto r = emit_entry_load(); !r) return r;
  if (!query_.span) {
    if (auto r = emit_filters(query_.filters); !r) return r;
    if (query_.streaming()) return emit_event();
    if (auto r = emit_key(); !r) return r;
    return emit_update();
  }
  // A span's end: the filters that need no stored begin run before the lookup; none of them
  // consumes the span (a rejected end event leaves it open). It is consumed last.
  std::vector<ExprPtr> before, after;
  for (const auto& f : query_.filters) (reads_span(*f) ? after : before).push_back(clone_expr(*f));
  if (const auto* own = query_.span->end_filters_at(static_cast<size_t>(env_.index)))
    for (const auto& f : *own) (reads_span(*f) ? after : before).push_back(clone_expr(*f));
  if (auto r = emit_filters(before); !r) return r;
  if (query_.span->keep_unmatched) return emit_span_end_keeping();  // nothing `after` (checker)
  if (auto r = emit_span_lookup(); !r) return r;
  if (auto r = emit_filters(after); !r) return r;
  if (query_.span->report_open) {  // the rows are the open spans: an end only consumes
  } else if (query_.streaming()) {
    if (auto r = emit_event(); !r) return r;
  } else {
    if (auto r = emit_key(); !r) return r;
    if (auto r = emit_update(); !r) return r;
    // Named per query: a fused program holds several span ends in one function.
    if (!layout_.val.empty()) line(layout_.prefix + "_done:");
  }
  emit_span_consume();
  return {};
}

bool reads_span(const Expr& e) {
  bool reads = false;
  for_each_node(e, [&](const Expr& n) {
    const auto* b = n.as<BuiltinRef>();
    reads = reads || n.as<Capture>() || (b && b->which == Builtin::Duration);
  });
  return reads;
}

bool also_begins(const CheckedQuery& q, const ProbeRef& probe) {
  return q.span && std::any_of(q.span->begin.begin(), q.span->begin.end(),
                               [&](const ProbeRef& b) { return b.spec == probe.spec; });
}

void FunctionGen::emit_no_slot_exit(const std::string& slot) {
  line(fmt::format("if (!{}) {{  /* no memory for the thread's slot */", slot));
  // In plain C its 1 made in place: LLVM would share a constant 1 with the get's F_CREATE.
  line("  " + (dialect() == Dialect::Bcc
                   ? fmt::format("{}_drop();", layout_.prefix)
                   : plain_counter_add_made_one(layout_.map("dropped"))));
  line("  return 0;");
  line("}");
}

Result<void> FunctionGen::emit_span_begin() {
  if (query_.span->nest) return emit_nest_begin();
  if (query_.pid_at_begin)
    if (auto r = emit_pid_filter(); !r) return r;
  size_t begin_probe = static_cast<size_t>(env_.index);
  if (function_reads_entry(query_, Role::SpanBegin, begin_probe))
    if (auto r = emit_entry_load(); !r) return r;
  if (auto r = emit_filters(query_.span->begin_filters_at(begin_probe)); !r) return r;
  std::string ts = cached("ts", "u64 ts = bpf_ktime_get_ns();");
  if (span_in_task_storage(query_)) {
    if (!layout_.span_val.empty())
      if (auto r = emit_span_value(); !r) return r;
    line(fmt::format("{} *sp = {};", layout_.span_val_type(),
                     task_storage_get(dialect(), layout_.map("start"),
                                      "BPF_LOCAL_STORAGE_GET_F_CREATE")));
    emit_no_slot_exit("sp");
    if (layout_.span_val.empty())
      line(fmt::format("*sp = {};  /* a later begin replaces an earlier one */", ts));
    else
      line(fmt::format("__builtin_memcpy(sp, &{0}, sizeof({0}));  /* a later begin replaces an "
                       "earlier one */",
                       layout_.span_var));
    return {};
  }
  auto key = span_key_value(query_.span->begin_key_at(begin_probe));
  if (!key) return std::unexpected(key.error());
  std::string value = "&" + ts;
  if (!layout_.span_val.empty()) {
    if (auto r = emit_span_value(); !r) return r;
    value = "&" + layout_.span_var;
  }
  // BPF_ANY: a later begin with the same key replaces an earlier one (its end measures from it).
  line(fmt::format("if ({})  /* the map is full */",
                   map_update(dialect(), layout_.map("start"), "&" + *key, value)));
  line(fmt::format("  {}_drop();", layout_.prefix));
  return {};
}

// The value a begin stores: its time and every capture the end uses.
Result<void> FunctionGen::emit_span_value() {
  if (layout_.span_val_on_stack && once("span value"))
    line(fmt::format("{} sv;", layout_.span_val.type()));
  else
    ensure_scratch();
  ensure_span_value_zeroed();
  line(fmt::format("{}.ts = {};", layout_.span_var, cached("ts", "u64 ts = bpf_ktime_get_ns();")));
  const auto& captures = query_.span->captures;
  for (size_t i = 0; i < captures.size(); ++i) {
    const CMember* m = capture_member_at(layout_, i);
    if (auto r = emit_member(*captures[i], layout_.span_var + "." + m->name, m->size); !r) return r;
  }
  return {};
}

// Strings are read into the value and copied whole into keys at the end: no stale bytes.
void FunctionGen::ensure_span_value_zeroed() {
  if (layout_.span_val_on_stack && once("span value"))
    line(fmt::format("{} sv;", layout_.span_val.type()));
  if (!layout_.span_val_on_stack) ensure_scratch();
  if (!once("span value zeroed")) return;
  zero_in_pieces(layout_.span_var, layout_.span_val.size());
}

const CMember* FunctionGen::capture_member(const Capture& c) const {
  int slot = query_.span ? query_.span->capture_slot(*c.inner) : -1;
  if (slot < 0) return nullptr;
  return capture_member_at(layout_, static_cast<size_t>(slot));
}

Result<CValue> FunctionGen::capture(const Expr& e, const Capture& c) {
  if (env_.role != Role::Main || !query_.span)
    return std::unexpected(unsupported(e, "'begin.' exists only at the end of a span"));
  if (is_begin_time(*c.inner)) return CValue{layout_.span_ts(), Type::integer(64, false)};
  const CMember* m = capture_member(c);
  if (!m) return std::unexpected(unsupported(e, fmt::format("'{}' was not captured", e.text)));
  Type t = e.type.is_bool() ? Type::boolean() : e.type;
  return CValue{"sp->" + m->name, t};
}

bool span_in_task_storage(const CheckedQuery& q) {
  // report: open walks the open spans at each print: a thread's storage cannot be walked.
  if (!q.span || q.span->composite() || q.span->report_open) return false;
  auto is_tid = [](const ExprPtr& k) {
    const auto* ref = k->as<BuiltinRef>();
    return ref && ref->which == Builtin::Tid;
  };
  auto keys = q.span->all_keys();
  return std::ranges::all_of(keys, [&](const auto* key) { return is_tid((*key)[0]); });
}

Result<std::string> FunctionGen::span_key_value(const std::vector<ExprPtr>& key) {
  if (key.size() == 1) {
    auto k = typed_value(*key[0]);
    if (!k) return std::unexpected(k.error());
    line(fmt::format("u64 skey = {};", k->text));
    return std::string("skey");
  }
  line(fmt::format("{} skey = {{}};", layout_.span_key.type()));
  for (size_t i = 0; i < key.size(); ++i) {
    auto k = typed_value(*key[i]);
    if (!k) return std::unexpected(k.error());
    line(fmt::format("skey.k{} = {};", i, k->text));
  }
  return std::string("skey");
}

// The end of a span: find when it began (and what it captured); an end without a begin stops
// here. Consumed by emit_span_consume.
Result<void> FunctionGen::emit_span_lookup() {
  if (auto r = emit_span_find(); !r) return r;
  line(fmt::format("if ({})", span_missing()));
  line("  return 0;");
  emit_duration();
  return {};
}

// `sp`: the stored begin of the end's key, or null (in task storage, also a slot whose span
// is over: its time is 0).
Result<void> FunctionGen::emit_span_find() {
  std::string type = layout_.span_val_type();
  if (span_in_task_storage(query_)) {
    line(fmt::format("{} *sp = {};", type, task_storage_get(dialect(), layout_.map("start"), "0")));
    return {};
  }
  auto key = span_key_value(query_.span->end_key_at(static_cast<size_t>(env_.index)));
  if (!key) return std::unexpected(key.error());
  line(fmt::format("{} *sp = {};", type, map_lookup(dialect(), layout_.map("start"), "&" + *key)));
  return {};
}

// The C conditions that the end found an open span, and that it found none.
std::string FunctionGen::span_found() const {
  if (span_in_task_storage(query_)) return fmt::format("sp && {} != 0", layout_.span_ts());
  return "sp";
}

std::string FunctionGen::span_missing() const {
  if (span_in_task_storage(query_)) return fmt::format("!sp || {} == 0", layout_.span_ts());
  return "!sp";
}

void FunctionGen::emit_duration() {
  std::string ts = cached("ts", "u64 ts = bpf_ktime_get_ns();");
  line(fmt::format("u64 duration = {} - {};", ts, layout_.span_ts()));
}

// Ends the span: after everything that reads the stored value.
void FunctionGen::emit_span_consume() { line(span_consume() + "  /* the span is over */"); }

std::string FunctionGen::span_consume() const {
  if (span_in_task_storage(query_)) return fmt::format("{} = 0;", layout_.span_ts());
  return map_delete(dialect(), layout_.map("start"), "&skey") + ";";
}

// --pid: uprobes and USDT are attached to the process; everything else filters here.
Result<void> FunctionGen::emit_pid_filter() {
  if (query_.pid < 0 || (attach_filters_pid(env_.probe->kind) && !query_.pid_tree)) return {};
  std::string v = cached("pid_tgid", "u64 pid_tgid = bpf_get_current_pid_tgid();");
  if (query_.pid_tree) {  // -c: the command, or a process it started (codegen/process_tree.h)
    std::string tgid = cached("tgid", fmt::format("u32 tgid = (u32)({} >> 32);", v));
    line(fmt::format("if ({} != {} && !{})", tgid,
                     runtime_constant(static_cast<uint64_t>(query_.pid), "-c").text,
                     process_tree_lookup(dialect(), "&" + tgid)));
    line("  return 0;");
    return {};
  }
  line(fmt::format("if ((u32)({} >> 32) != {})", v,
                   runtime_constant(static_cast<uint64_t>(query_.pid), "--pid").text));
  line("  return 0;");
  return {};
}

// Filters first, reads last: conjuncts that read no string run before any string is read.
Result<void> FunctionGen::emit_filters(const std::vector<ExprPtr>& filters) {
  std::vector<const Expr*> cheap;
  std::vector<std::pair<int, const Expr*>> reading;
  for (const auto& f : filters) {
    std::vector<StringUse> uses;
    collect_strings(*f, uses);
    if (uses.empty())
      cheap.push_back(f.get());
    else
      reading.emplace_back(read_cost(uses), f.get());
  }
  std::stable_sort(reading.begin(), reading.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [cost, f] : reading) cheap.push_back(f);
  for (const Expr* f : cheap) {
    line(fmt::format("/* where {} */", c_names::comment_text(f->text)));  // before its reads
    auto cond = condition(*f);
    if (!cond) return std::unexpected(cond.error());
    std::string test = negate(*cond);
    line(test.front() == '(' ? "if " + test : "if (" + test + ")");
    line("  return 0;");
  }
  return {};
}

void FunctionGen::ensure_scratch() {
  if (!once("scratch")) return;
  std::string idx = cached("idx0", "u32 idx0 = 0;");
  line(fmt::format("struct {} *sc = {};", layout_.scratch.tag(),
                   map_lookup(dialect(), layout_.scratch.tag(), "&" + idx)));
  line("if (!sc)");
  line("  return 0;");
}

void FunctionGen::ensure_key_zeroed() {
  if (!once("key")) return;
  if (layout_.key_on_stack) {
    const StructLayout& outer = layout_.hkey.empty() ? layout_.key : layout_.hkey;
    line(fmt::format("{} {};", outer.type(), layout_.key_outer));
  } else {
    ensure_scratch();
  }
  if (!key_written_whole())
    line(fmt::format("__builtin_memset(&{0}, 0, sizeof({0}));", layout_.key_outer));
}

// Whether the key's members will cover every byte of it, so that zeroing it first only adds
// stores: no padding, no histogram slot around it, and each member an integer, bool or stack id
// (an assignment writes all of it) or `comm` (bpf_get_current_comm pads the name with NULs to
// the size it is given). Strings read from memory are zeroed past their NUL only in the key.
bool FunctionGen::key_written_whole() const {
  if (!layout_.hkey.empty()) return false;
  for (const auto& m : layout_.key.members())
    if (m.padding) return false;
  for (const auto& key : query_.keys) {
    const Expr& e = *key.expr;
    if (e.type.is_bytes()) return false;
    if (!e.type.is_string()) continue;
    auto* b = e.as<BuiltinRef>();
    if (!b || b->which != Builtin::Comm) return false;
  }
  return true;
}

void FunctionGen::ensure_event_zeroed() {
  if (!once("event")) return;
  if (layout_.event_on_stack)
    line(fmt::format("{} {};", layout_.event.type(), layout_.event_var));
  else
    ensure_scratch();
  if (layout_.event_zeroed > kMaxInlineMemset)
    zero_in_pieces(layout_.event_var, layout_.event_zeroed);
  else if (layout_.event_zeroed < layout_.event.size())
    line(fmt::format("__builtin_memset(&{}, 0, {});  /* up to the stacks */", layout_.event_var,
                     layout_.event_zeroed));
  else
    line(fmt::format("__builtin_memset(&{0}, 0, sizeof({0}));", layout_.event_var));
}

// Zeroes the first `bytes` of a struct too large for one memset, one inlined memset per KiB.
// LLVM merges adjacent memsets into one (a call again): an empty asm that may touch memory
// between them keeps them apart. The stores are those one memset would be: nothing is added.
void FunctionGen::zero_in_pieces(const std::string& lvalue, uint32_t bytes) {
  line(fmt::format("/* {} bytes, zeroed {} at a time: LLVM makes a larger memset a call */", bytes,
                   kMaxInlineMemset));
  for (uint32_t at = 0; at < bytes; at += kMaxInlineMemset) {
    if (at > 0) {
      use_helper(program_.helpers, CHelper::Barrier);
      line("BPFQL_BARRIER();");
    }
    // Through a u64 pointer: LLVM then knows each piece is 8-byte aligned, and stores words.
    std::string piece = at == 0 ? "&" + lvalue : fmt::format("(u64 *)&{} + {}", lvalue, at / 8);
    line(
        fmt::format("__builtin_memset({}, 0, {});", piece, std::min(kMaxInlineMemset, bytes - at)));
  }
}

// The value a new key starts from; in the scratch array it is a member nothing ever writes.
void FunctionGen::ensure_zero_value() {
  if (!once("zero")) return;
  if (layout_.zero_on_stack)
    line(fmt::format("{} {} = {{}};", layout_.val.type(), layout_.zero_var));
  else
    ensure_scratch();
}

Result<void> FunctionGen::emit_member(const Expr& e, const std::string& lvalue, uint32_t size) {
  if (e.type.is_string()) {
    if (auto* lit = e.as<StringLiteral>()) return store_literal(lvalue, size, lit->value);
    auto s = string_value(e, false);
    if (!s) return std::unexpected(s.error());
    if (s->lvalue != lvalue)  // the same string is another member too
      line(
          fmt::format("__builtin_memcpy({}, {}, {});", lvalue, s->lvalue, std::min(size, s->size)));
    return {};
  }
  if (e.type.is_bytes()) return copy_bytes(e, lvalue, size);
  if (e.type.kind == TypeKind::Stack && e.as<Capture>()) {  // the stack id the begin stored
    auto v = value(e);
    if (!v) return std::unexpected(v.error());
    line(fmt::format("{} = {};", lvalue, v->text));
    return {};
  }
  if (e.type.kind == TypeKind::Stack) {
    auto* b = e.as<BuiltinRef>();
    if (!b || (b->which != Builtin::Kstack && b->which != Builtin::Ustack))
      return std::unexpected(unsupported(e, fmt::format("'{}' is not a stack", e.text)));
    const char* flags = b->which == Builtin::Ustack ? "BPF_F_USER_STACK" : "0";
    if (b->which == Builtin::Kstack) kernel_stack_ = true;
    if (query_.streaming() && env_.role == Role::Main)  // the event's own array
      line(fmt::format("bpf_get_stack({}, {}, sizeof({}), {});", env_.ctx, lvalue, lvalue, flags));
    else
      line(fmt::format("{} = {};", lvalue,
                       get_stackid(dialect(), layout_.map("stacks"), env_.ctx, flags)));
    return {};
  }
  if (e.type.is_bool()) {
    auto c = condition(e);
    if (!c) return std::unexpected(c.error());
    line(fmt::format("{} = {};", lvalue, *c));
    return {};
  }
  auto v = typed_value(e);
  if (!v) return std::unexpected(v.error());
  line(fmt::format("{} = {};", lvalue, v->text));
  return {};
}

Result<void> FunctionGen::emit_key() {
  if (query_.keys.empty()) return {};
  ensure_key_zeroed();
  for (size_t i = 0; i < query_.keys.size(); ++i) {
    const auto& key = query_.keys[i];
    const CMember* m = nullptr;
    for (const auto& member : layout_.key.members())
      if (member.name == layout_.key_members[i]) m = &member;
    if (auto r = emit_member(*key.expr, layout_.key_var + "." + m->name, m->size); !r) return r;
  }
  return {};
}

Result<void> FunctionGen::emit_event() {
  if (auto r = emit_event_members(EventPart::All); !r) return r;
  emit_event_submit();
  return {};
}

// The event is zeroed and its time set by the first call.
Result<void> FunctionGen::emit_event_members(EventPart part) {
  ensure_event_zeroed();
  if (once("event ts"))
    line(fmt::format("{}.ts = {};", layout_.event_var, cached("ts", "u64 ts = bpf_ktime_get_ns();")));
  for (size_t i = 0; i < query_.stream.size(); ++i) {
    const Expr& e = *query_.stream[i].expr;
    if (part != EventPart::All && reads_span(e) != (part == EventPart::FromBegin)) continue;
    const CMember* m = layout_.event.find(layout_.event_members[i]);
    if (auto r = emit_member(e, layout_.event_var + "." + m->name, m->size); !r) return r;
  }
  return {};
}

void FunctionGen::emit_event_submit(const std::string& indent) {
  line(indent + fmt::format("if ({} < 0)  /* the buffer is full */",
                            perf_submit(dialect(), layout_.map("events"), env_.ctx,
                                        "&" + layout_.event_var,
                                        fmt::format("sizeof({})", layout_.event_var))));
  line(indent + fmt::format("  {}_lose();", layout_.prefix));
}

Result<void> FunctionGen::emit_update() {
  if (!layout_.val.empty()) {
    if (query_.keys.empty()) {
      std::string idx = cached("idx0", "u32 idx0 = 0;");
      line(fmt::format("{} *v = {};", layout_.val.type(),
                       map_lookup(dialect(), layout_.map("vals"), "&" + idx)));
      line("if (!v)");
      line(query_.span ? "  goto " + layout_.prefix + "_done;" : "  return 0;");
    } else if (layout_.slots) {
      // A system call's number: its slot of the array, no hash (QueryLayout::slots).
      std::string number = layout_.key_var + "." + layout_.key_members[0];
      ensure_zero_value();
      line(fmt::format("{} *v;", layout_.val.type()));
      line(fmt::format("if ((u64){} < {}) {{", number, layout_.slots));
      line(fmt::format("  u32 slot = (u32){};", number));
      line(fmt::format("  v = {};", map_lookup(dialect(), layout_.map("slots"), "&slot")));
      line("  if (!v)");
      line("    return 0;");
      line("} else {");
      line(fmt::format("  v = {};",
                       map_lookup_or_init(dialect(), layout_.map("vals"), "&" + layout_.key_var,
                                          "&" + layout_.zero_var)));
      line("  if (!v) {  /* the map is full */");
      line(fmt::format("    {}_drop();", layout_.prefix));
      line("    return 0;");
      line("  }");
      line("}");
    } else {
      ensure_zero_value();
      line(fmt::format("{} *v = {};", layout_.val.type(),
                       map_lookup_or_init(dialect(), layout_.map("vals"), "&" + layout_.key_var,
                                          "&" + layout_.zero_var)));
      line("if (!v) {  /* the map is full */");
      line(fmt::format("  {}_drop();", layout_.prefix));
      line(query_.span ? "  goto " + layout_.prefix + "_done;  /* the span still ends */"
                       : "  return 0;");
      line("}");
    }
    if (counts_events()) line("v->n++;  /* per-CPU: no atomics needed */");
  }
  for (size_t i = 0; i < query_.aggregates.size(); ++i) {
    const auto& agg = query_.aggregates[i];
    auto r = layout_.hist_maps[i].empty() ? emit_aggregate(agg, i) : emit_histogram(agg, i);
    if (!r) return r;
  }
  return {};
}

// Whether the value's `n` is kept: count, avg and stats read it, min and max test it for a CPU's
// first value, and a slot or the keyless array entry exists before any event (the runtime takes
// an all-zero slot as unused). A hash entry exists only once a key had an event, so a keyed query
// of sums alone leaves `n` at 0 and saves an increment on every event.
bool FunctionGen::counts_events() const {
  if (query_.keys.empty() || layout_.slots) return true;
  return std::any_of(query_.aggregates.begin(), query_.aggregates.end(), [](const AggregateItem& a) {
    return a.kind != AggKind::Sum && !is_histogram(a.kind);
  });
}

// sum/avg/stats add to their slot; min/max keep the first value a CPU sees, then the extreme.
Result<void> FunctionGen::emit_aggregate(const AggregateItem& agg, size_t i) {
  const std::string& member = layout_.agg_members[i];
  if (member.empty()) return {};  // count(): v->n
  auto x = typed_value(*agg.arg);
  if (!x) return std::unexpected(x.error());
  bool is_signed = agg.arg->type.is_integer() && agg.arg->type.is_signed;
  bool exact = x->small_literal ||
               (x->type.bits == 64 && x->type.is_signed == is_signed && !x->type.is_bool());
  std::string value = exact ? x->text : fmt::format("({}){}", is_signed ? "s64" : "u64", x->text);
  if (agg.kind == AggKind::Min || agg.kind == AggKind::Max) {
    std::string a = fmt::format("a{}", i);
    line(fmt::format("{} {} = {};", is_signed ? "s64" : "u64", a, value));
    line(fmt::format("if (v->n == 1 || {} {} v->{})", a, agg.kind == AggKind::Min ? "<" : ">",
                     member));
    line(fmt::format("  v->{} = {};", member, a));
  } else {
    line(fmt::format("v->{} += {};", member, value));
  }
  return {};
}

Result<void> FunctionGen::emit_histogram(const AggregateItem& agg, size_t i) {
  auto x = typed_value(*agg.arg);
  if (!x) return std::unexpected(x.error());
  bool is_signed = agg.arg->type.is_integer() && agg.arg->type.is_signed;
  std::string slot;
  switch (agg.kind) {
    case AggKind::Hist:
      use_helper(program_.helpers, is_signed ? CHelper::HistSlotS : CHelper::HistSlot);
      slot = fmt::format("bpfql_hist_slot{}({})", is_signed ? "_s" : "", x->text);
      break;
    case AggKind::Lhist: {
      use_helper(program_.helpers, is_signed ? CHelper::LhistSlotS : CHelper::LhistSlot);
      int last = buckets::lhist_slots(agg.lhist_min, agg.lhist_max, agg.lhist_step) - 1;
      slot = fmt::format("bpfql_lhist_slot{}({}, {}, {}, {}, {})", is_signed ? "_s" : "", x->text,
                         c_names::s64_literal(agg.lhist_min), c_names::s64_literal(agg.lhist_max),
                         c_names::s64_literal(agg.lhist_step), last);
      break;
    }
    case AggKind::Percentile:
      use_helper(program_.helpers, is_signed ? CHelper::LogLinearSlotS : CHelper::LogLinearSlot);
      slot = fmt::format("bpfql_log_linear_slot{}({})", is_signed ? "_s" : "", x->text);
      break;
    default:
      return std::unexpected(unsupported(*agg.arg, "not a histogram"));
  }
  const std::string& map = layout_.hist_maps[i];
  std::string counter = fmt::format("c{}", i);
  if (query_.keys.empty()) {
    line(fmt::format("u32 slot{} = {};", i, slot));
    line(fmt::format("u64 *{} = {};", counter,
                     map_lookup(dialect(), map, fmt::format("&slot{}", i))));
    line(fmt::format("if ({})", counter));
    line(fmt::format("  (*{})++;", counter));
    return {};
  }
  std::string zero = cached("zero64", "u64 zero64 = 0;");
  line(fmt::format("{}.slot = {};", layout_.key_outer, slot));
  line(fmt::format("u64 *{} = {};", counter,
                   map_lookup_or_init(dialect(), map, "&" + layout_.key_outer, "&" + zero)));
  line(fmt::format("if ({})", counter));
  line(fmt::format("  (*{})++;", counter));
  line("else  /* the map is full */");
  line(fmt::format("  {}_drop();", layout_.prefix));
  return {};
}

}  // namespace bpfql::codegen
