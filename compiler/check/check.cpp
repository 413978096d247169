#include "compiler/check/check.h"
#include "compiler/check/requirements.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/syntax/ast_walk.h"
#include "compiler/check/expr.h"
#include "compiler/check/probe.h"
#include "compiler/check/select.h"
#include "compiler/check/pid_sides.h"
#include "compiler/check/open_spans.h"
#include "compiler/check/entry_values.h"
#include "compiler/check/span.h"
#include "compiler/check/span_check.h"
#include "compiler/check/span_nest.h"
#include "compiler/check/span_unmatched.h"
#include "compiler/syntax/lexer.h"
#include "compiler/syntax/parser.h"

namespace bpfql {
namespace {

// The nearest column by spelling, else all of them (a query has few): order_by names a column
// by its alias or its text as written, which users misremember ("count" for "count()").
std::string column_suggestion(const std::string& wanted, const std::vector<std::string>& columns) {
  if (std::string near = did_you_mean(wanted, columns); !near.empty()) return near;
  for (const std::string& c : columns)
    if (c == wanted + "()") return fmt::format("; did you mean '{}'?", c);
  std::vector<std::string> quoted;
  for (const std::string& c : columns) quoted.push_back("'" + c + "'");
  return fmt::format("; the columns are {}", fmt::join(quoted, ", "));
}

// Splits a checked condition at top-level `&&` so code generation can order the conjuncts
// (cheap integer tests before string reads).
void split_conjuncts(ExprPtr expr, std::vector<ExprPtr>& out) {
  if (auto* b = expr->as<Binary>(); b && b->op == BinaryOp::And) {
    split_conjuncts(std::move(b->lhs), out);
    split_conjuncts(std::move(b->rhs), out);
    return;
  }
  out.push_back(std::move(expr));
}

// BPFQL splits a where clause `LHS OP WORD` at white space, so an unquoted WORD is everything
// after the operator: `comm is php-fpm` compares comm with "php-fpm". Used when the clause does
// not check as an ordinary expression; nullptr when the clause is not of that form.
ExprPtr bpfql_word_clause(const Located& text, const ExprScope& scope) {
  static const std::set<std::string> kEquality = {"==", "!=", "is", "not"};
  std::vector<std::pair<std::string, size_t>> words;  // word, offset
  for (size_t i = 0; i < text.text.size();) {
    if (std::isspace(static_cast<unsigned char>(text.text[i]))) { ++i; continue; }
    size_t start = i;
    while (i < text.text.size() && !std::isspace(static_cast<unsigned char>(text.text[i]))) ++i;
    words.emplace_back(text.text.substr(start, i - start), start);
  }
  bool is_not = words.size() == 4 && words[1].first == "is" && words[2].first == "not";
  if (!(words.size() == 3 && kEquality.count(words[1].first)) && !is_not) return nullptr;
  const auto& [word, word_offset] = words.back();
  if (word[0] == '"' || word[0] == '\'' || word[0] == '$' || std::isdigit(static_cast<unsigned char>(word[0])))
    return nullptr;  // quoted, a parameter, or a number: not a BPFQL word
  SourceMap map(text.text, text.loc);
  auto lhs = parse_expression(words[0].first, map.loc(words[0].second));
  if (!lhs || !check_expr(**lhs, scope) || !(*lhs)->type.is_string()) return nullptr;
  auto literal = std::make_unique<Expr>();
  literal->node = StringLiteral{word};
  literal->loc = map.loc(word_offset);
  literal->text = word;
  if (!check_expr(*literal, scope)) return nullptr;
  auto clause = std::make_unique<Expr>();
  bool negated = is_not || words[1].first == "!=" || words[1].first == "not";
  clause->node = Binary{negated ? BinaryOp::Ne : BinaryOp::Eq, std::move(*lhs), std::move(literal)};
  clause->loc = text.loc;
  clause->text = text.text;
  clause->type = Type::boolean();
  return clause;
}

}  // namespace

Result<void> check_conditions(const std::vector<Located>& texts, const ExprScope& scope,
                              std::vector<ExprPtr>& out) {
  for (const auto& text : texts) {
    auto expr = parse_expression(text.text, text.loc);
    if (!expr) {
      if (ExprPtr word_clause = bpfql_word_clause(text, scope)) {
        out.push_back(std::move(word_clause));
        continue;
      }
      return std::unexpected(expr.error());
    }
    if (auto r = check_expr(**expr, scope); !r) {
      if (ExprPtr word_clause = bpfql_word_clause(text, scope)) {
        out.push_back(std::move(word_clause));
        continue;
      }
      return r;
    }
    const Type& type = (*expr)->type;
    if (!type.is_bool() && !type.is_integer())
      return error_at((*expr)->loc, fmt::format("a where clause must be a condition, but '{}' is a {}",
                                                (*expr)->text, type.describe()));
    split_conjuncts(std::move(*expr), out);
  }
  return {};
}

namespace {

// Every `begin.EXPR` the end's expressions use, once each: what a begin stores.
void collect_captures(CheckedQuery& q) {
  std::vector<const Expr*> ends;
  for (const auto& f : q.filters) ends.push_back(f.get());
  for (const auto& k : q.keys) ends.push_back(k.expr.get());
  for (const auto& a : q.aggregates)
    if (a.arg) ends.push_back(a.arg.get());
  for (const auto& st : q.stream) ends.push_back(st.expr.get());
  for (const auto& rule : q.span->rules)
    if (rule.filters)
      for (const auto& f : *rule.filters) ends.push_back(f.get());
  for (const Expr* root : ends)
    for_each_node(*root, [&](const Expr& e) {
      const auto* c = e.as<Capture>();
      if (!c || is_begin_time(*c->inner) || q.span->capture_slot(*c->inner) >= 0) return;
      q.span->captures.push_back(clone_expr(*c->inner));
    });
}

Result<void> check_settings(const QuerySpec& spec, const CheckOptions& options, CheckedQuery& out) {
  out.interval_ns = options.interval_ns ? options.interval_ns : spec.interval_ns;
  out.stop_after_ns = options.stop_after_ns ? options.stop_after_ns : spec.stop_after_ns;
  out.cumulative = spec.cumulative;
  out.limit = spec.limit;
  out.max_entries = spec.max_entries;
  out.strlen = spec.strlen;
  out.pid = options.pid ? *options.pid : spec.pid.value_or(-1);
  out.pid_tree = options.pid && options.pid_tree;
  if (spec.order_by) {
    const OrderBy& order = *spec.order_by;
    if (out.streaming())
      return error_at(order.loc, "order_by sorts aggregates; this query streams events as they come");
    if (std::find(out.columns.begin(), out.columns.end(), order.column) == out.columns.end())
      return error_at(order.loc, fmt::format("order_by names no column: '{}'", order.column) +
                                     column_suggestion(order.column, out.columns));
    out.order_by = order.column;
    bool is_key = std::any_of(out.keys.begin(), out.keys.end(),
                              [&](const KeyItem& k) { return k.name == order.column; });
    out.descending = order.descending.value_or(!is_key);
  }
  return {};
}

// Every expression of a checked query, for whole-query facts such as "uses ppid".
std::vector<const Expr*> all_expressions(const CheckedQuery& q) {
  std::vector<const Expr*> all;
  for (const auto& f : q.filters) all.push_back(f.get());
  for (const auto& k : q.keys) all.push_back(k.expr.get());
  for (const auto& a : q.aggregates)
    if (a.arg) all.push_back(a.arg.get());
  for (const auto& s : q.stream) all.push_back(s.expr.get());
  for (const auto& v : q.entry_values) all.push_back(v.get());
  if (q.span) {
    for (const auto& k : q.span->begin_key) all.push_back(k.get());
    for (const auto& k : q.span->end_key) all.push_back(k.get());
    for (const auto& f : q.span->begin_filters) all.push_back(f.get());
    for (const auto& c : q.span->captures) all.push_back(c.get());
    for (const auto& rule : q.span->rules) {
      if (rule.key)
        for (const auto& k : *rule.key) all.push_back(k.get());
      if (rule.filters)
        for (const auto& f : *rule.filters) all.push_back(f.get());
    }
  }
  return all;
}

// ppid reads task_struct, whose layout only the running kernel's BTF knows.
Result<void> find_task_offsets(const KernelCatalog& catalog, CheckedQuery& q) {
  const Expr* ppid = nullptr;
  bool pcomm = false;
  for (const Expr* root : all_expressions(q))
    for_each_node(*root, [&](const Expr& e) {
      auto* b = e.as<BuiltinRef>();
      if (b && (b->which == Builtin::Ppid || b->which == Builtin::Pcomm) && !ppid) ppid = &e;
      if (b && b->which == Builtin::Pcomm) pcomm = true;
    });
  if (!ppid) return {};
  auto parent = catalog.kernel_member_offset("task_struct", "real_parent");
  auto tgid = catalog.kernel_member_offset("task_struct", "tgid");
  auto comm = catalog.kernel_member_offset("task_struct", "comm");
  if (!parent || !tgid || (pcomm && !comm))
    return error_at(ppid->loc, fmt::format("'{}' needs the kernel's BTF (/sys/kernel/btf/vmlinux) "
                                           "to find task_struct.real_parent, and this kernel does "
                                           "not provide it",
                                           ppid->text));
  q.task_offsets = TaskOffsets{*parent, *tgid, comm.value_or(-1)};
  return {};
}

// A syscalls:* tracepoint's body may run in the program on raw_syscalls (fusion.h), which sees
// 32-bit system calls too: it tells them apart by thread_info.status, at the offset BTF gives.
// Without BTF the body keeps its own tracepoint.
void find_syscall_compat_offset(const KernelCatalog& catalog, CheckedQuery& q) {
  auto on_syscalls = [](const std::vector<ProbeRef>& probes) {
    return std::any_of(probes.begin(), probes.end(), [](const ProbeRef& p) {
      return p.kind == ProbeKind::Tracepoint && p.format && p.format->category == "syscalls";
    });
  };
  if (!on_syscalls(q.probes) && !(q.span && on_syscalls(q.span->begin))) return;
  auto info = catalog.kernel_member_offset("task_struct", "thread_info");
  auto status = catalog.kernel_member_offset("thread_info", "status");
  if (info && status && *info >= 0 && *status >= 0) q.syscall_compat_offset = *info + *status;
}

// A body on raw_syscalls (or one moved there from syscalls:*) may run as a raw tracepoint, which
// is handed the system call's registers instead of a record: it reads them at the offsets BTF
// gives for struct pt_regs. Only where every register is found (x86_64's names). Only where a
// register may be read: a moved syscalls:* body (its arguments, its number at the exit) and a
// body on raw_syscalls:sys_exit (the number); at raw_syscalls:sys_enter the number is the raw
// tracepoint's own argument, and loading the kernel's BTF for nothing would double a small
// query's memory.
void find_syscall_regs(const KernelCatalog& catalog, CheckedQuery& q) {
  auto on_syscall_events = [](const std::vector<ProbeRef>& probes) {
    return std::any_of(probes.begin(), probes.end(), [](const ProbeRef& p) {
      return p.kind == ProbeKind::Tracepoint && p.format &&
             (p.format->category == "syscalls" ||
              (p.format->category == "raw_syscalls" && p.format->name == "sys_exit"));
    });
  };
  if (!on_syscall_events(q.probes) && !(q.span && on_syscall_events(q.span->begin))) return;
  SyscallRegs regs;
  const char* names[] = {"di", "si", "dx", "r10", "r8", "r9"};
  for (size_t i = 0; i < regs.args.size(); ++i) {
    auto at = catalog.kernel_member_offset("pt_regs", names[i]);
    if (!at || *at < 0) return;
    regs.args[i] = *at;
  }
  auto nr = catalog.kernel_member_offset("pt_regs", "orig_ax");
  if (!nr || *nr < 0) return;
  regs.nr = *nr;
  q.syscall_regs = regs;
}

// Comparisons of a string with literals are unrolled, one byte each (compiler/codegen/strings.cpp), and
// an `in` list folds all of its items into one expression, whose compile time grows faster than
// its size: measured with clang 14 (plain C) on a busy 2-CPU machine, `in` lists of 4,096
// compared bytes (64 × 63, 16 × 255, 20 × 200, NULs included) took 11..81 s; 6,432 (32 × 200)
// took 400 s; larger ones (issue 17) failed after minutes (a stack over 512 bytes, jumps out of
// BPF's range), with "the compiler process exited with status 1". The budget is per query (one
// program): refused at `check`, with the reason, instead of failing at `run`.
constexpr size_t kMaxComparedBytes = 4096;

// The bytes a node compares against string literals (a literal's bytes and its NUL).
size_t literal_compare_bytes(const Expr& e) {
  auto literal_bytes = [](const Expr& x) -> size_t {
    const auto* lit = x.as<StringLiteral>();
    return lit ? lit->value.size() + 1 : 0;
  };
  if (const auto* b = e.as<Binary>(); b && (b->op == BinaryOp::Eq || b->op == BinaryOp::Ne)) {
    if (b->lhs->as<StringLiteral>() && b->rhs->as<StringLiteral>()) return 0;  // constant
    return literal_bytes(*b->lhs) + literal_bytes(*b->rhs);
  }
  if (const auto* in = e.as<InList>(); in && in->value->type.is_string()) {
    size_t total = 0;
    for (const auto& item : in->items) total += literal_bytes(*item);
    return total;
  }
  if (const auto* call = e.as<Call>(); call && call->name == "startswith" && call->args.size() == 2)
    return literal_bytes(*call->args[1]);
  return 0;
}

size_t total_compared_bytes(const CheckedQuery& q) {
  size_t total = 0;
  for (const Expr* root : all_expressions(q))
    for_each_node(*root, [&](const Expr& e) { total += literal_compare_bytes(e); });
  return total;
}

Result<void> check_compared_bytes(const CheckedQuery& q) {
  size_t total = 0;
  const Expr* over = nullptr;
  for (const Expr* root : all_expressions(q))
    for_each_node(*root, [&](const Expr& e) {
      total += literal_compare_bytes(e);
      if (total > kMaxComparedBytes && !over) over = &e;
    });
  if (!over) return {};
  return error_at(over->loc,
                  fmt::format("the query compares {} bytes of string literals, more than the {} "
                              "one BPF program can hold (each byte is an instruction, and clang "
                              "would need more than the 512-byte BPF stack): use fewer or shorter "
                              "strings, or split the query",
                              total_compared_bytes(q), kMaxComparedBytes));
}

Result<CheckedQuery> check_query(const QuerySpec& spec, const QueryFile& file,
                                 const KernelCatalog& catalog, const CheckOptions& options) {
  CheckedQuery out;
  out.name = spec.name;
  out.description = spec.description;
  out.loc = spec.loc;

  if (spec.requirements)
    if (auto r = check_requirements(*spec.requirements, catalog); !r)
      return std::unexpected(r.error());

  ExprScope scope;
  scope.catalog = &catalog;
  scope.params = &spec.param_values;
  scope.macros = &file.macros;
  scope.lists = &file.lists;
  scope.strlen = spec.strlen;
  ExprScope begin_scope = scope;  // where `begin.EXPR` is typed
  if (spec.span) {
    if (auto r = check_span(*spec.span, catalog, scope, out); !r) return std::unexpected(r.error());
    scope.in_span_end = true;
    out.span->report_open = spec.span->report_open.has_value();
    scope.span_open = out.span->report_open;
    scope.span_nest = begin_scope.span_nest = spec.span->nest.has_value();
    scope.span_flow = spec.span->report_flow.has_value();
    begin_scope.probes = &out.span->begin;
    scope.begin_scope = &begin_scope;
  } else {
    if (spec.probes.empty()) return error_at(spec.loc, "the query has no probe");
    auto probes = resolve_probes(spec.probes, catalog, &spec.param_values);
    if (!probes) return std::unexpected(probes.error());
    out.probes = std::move(*probes);
  }
  scope.probes = &out.probes;

  scope.role = ExprRole::Filter;
  if (auto r = check_conditions(spec.where, scope, out.filters); !r) return std::unexpected(r.error());
  if (spec.span)
    if (auto r = check_span_end_rules(*spec.span, scope, out); !r) return std::unexpected(r.error());
  if (spec.select.empty()) return error_at(spec.loc, "the query selects nothing: add `select:`");
  if (auto r = check_select(spec, scope, out); !r) return std::unexpected(r.error());
  if (auto r = check_settings(spec, options, out); !r) return std::unexpected(r.error());
  if (out.span) {
    collect_captures(out);
    if (auto r = check_span_captures(out); !r) return std::unexpected(r.error());
    if (spec.span->report_open)
      if (auto r = check_open_report(*spec.span->report_open, out); !r)
        return std::unexpected(r.error());
    if (auto r = check_nest(*spec.span, begin_scope, out); !r) return std::unexpected(r.error());
    warn_task_context(out);
    if (auto r = check_pid_sides(out); !r) return std::unexpected(r.error());
    if (auto r = check_unmatched(*spec.span, out); !r) return std::unexpected(r.error());
  }
  if (auto r = collect_entry_values(out); !r) return std::unexpected(r.error());
  if (auto r = find_task_offsets(catalog, out); !r) return std::unexpected(r.error());
  find_syscall_compat_offset(catalog, out);
  find_syscall_regs(catalog, out);
  if (auto r = check_compared_bytes(out); !r) return std::unexpected(r.error());
  if (out.pid_tree) {
    std::vector<Located> trackers = {{"tracepoint:sched:sched_process_fork", spec.loc},
                                      {"tracepoint:sched:sched_process_exit", spec.loc}};
    auto probes = resolve_probes(trackers, catalog, nullptr);
    if (!probes) return std::unexpected(probes.error());
    out.tree_probes = std::move(*probes);
  }
  return out;
}

// The kernel runs at most 64 BPF programs on one tracepoint (BPF_TRACE_MAX_PROGS, counting every
// tool's): each query attaching to a tracepoint is one program there, so a file whose queries
// attach more fails at the 65th attach with "Argument list too long". Said here instead, at the
// probe of the query that goes over.
constexpr int kMaxProgramsPerTracepoint = 64;

Result<void> check_programs_per_tracepoint(const CheckedProgram& program) {
  std::map<std::string, int> programs;
  auto count = [&](const std::vector<ProbeRef>& probes) -> Result<void> {
    std::set<std::string> once;  // one program per query and tracepoint
    for (const auto& p : probes) {
      if (p.kind != ProbeKind::Tracepoint || !once.insert(p.spec).second) continue;
      if (++programs[p.spec] > kMaxProgramsPerTracepoint)
        return error_at(p.loc, fmt::format("{} would run {} programs of this file, more than the "
                                           "{} the kernel allows on one tracepoint (for all tools "
                                           "together): merge the queries that probe it",
                                           p.spec, programs[p.spec], kMaxProgramsPerTracepoint));
    }
    return {};
  };
  for (const auto& q : program.queries) {
    if (q.span)
      if (auto r = count(q.span->begin); !r) return r;
    if (auto r = count(q.probes); !r) return r;
  }
  return {};
}

}  // namespace

Result<CheckedProgram> check_file(const QueryFile& file, const KernelCatalog& catalog,
                                  const CheckOptions& options) {
  CheckedProgram program;
  for (const auto& [name, macro] : file.macros)
    if (is_builtin_name(name))
      return error_at(macro.name_loc, fmt::format("a macro cannot be named '{}': that is a "
                                                  "builtin, which every query sees as it is",
                                                  name));
  for (const auto& [name, list] : file.lists)
    if (auto macro = file.macros.find(name); macro != file.macros.end())
      return std::unexpected(Diagnostic{
          list.name_loc,
          fmt::format("'{}' is both a list and a macro: give one another name", name),
          {{macro->second.name_loc, fmt::format("macro '{}' is defined here", name)}}});
  std::set<std::string> names;
  for (const auto& spec : file.queries) {
    if (!names.insert(spec.name).second)
      return error_at(spec.loc, fmt::format("two queries are named '{}'", spec.name));
    auto query = check_query(spec, file, catalog, options);
    if (!query) return std::unexpected(query.error());
    program.queries.push_back(std::move(*query));
  }
  if (program.queries.empty()) return error_at(SourceLoc{file.path, 1, 1}, "the file has no queries");
  if (auto r = check_programs_per_tracepoint(program); !r) return std::unexpected(r.error());
  return program;
}

}  // namespace bpfql
