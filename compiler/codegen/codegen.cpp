// Code generation: one BCC-dialect C program for every query of a file, and the Plan that
// describes its maps and attach points. Layout decisions live in query_layout.cpp, map
// declarations in query.cpp, function bodies in function.cpp (statements), expr.cpp and
// strings.cpp.
#include "compiler/codegen/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/c_prelude.h"
#include "compiler/codegen/entry_values.h"
#include "compiler/codegen/function.h"
#include "compiler/codegen/fusion.h"
#include "compiler/codegen/internal.h"
#include "compiler/codegen/process_tree.h"

namespace bpfql {
namespace {

using codegen::AttachedBody;
using codegen::ProbeEnv;
using codegen::ProgramState;
using codegen::QueryLayout;
using codegen::Role;

Result<const codegen::TracepointStruct*> tracepoint_for(const ProbeRef& probe,
                                                        ProgramState& state) {
  if (!probe.format)
    return error_at(
        probe.loc, fmt::format("tracepoint '{}' has no format", c_names::comment_text(probe.spec)));
  std::string full = probe.format->category + ":" + probe.format->name;
  auto it = state.tracepoints.find(full);
  if (it == state.tracepoints.end()) {
    auto tp = codegen::tracepoint_struct(*probe.format, probe.loc, state.tracepoint_tags);
    if (!tp) return std::unexpected(tp.error());
    it = state.tracepoints.emplace(full, std::move(*tp)).first;
    state.tracepoint_order.push_back(full);
  }
  return &it->second;
}

PlanAttach attach_of(const CheckedQuery& q, const ProbeRef& probe, const std::string& function) {
  PlanAttach a;
  a.kind = probe.kind;
  a.function = function;
  a.spec = probe.spec;
  if (probe.format) a.tracepoint = probe.format->category + ":" + probe.format->name;
  a.binary = probe.binary;
  a.symbol = probe.symbol;
  a.provider = probe.provider;
  a.usdt_name = probe.usdt_name;
  bool per_process = probe.kind == ProbeKind::Uprobe || probe.kind == ProbeKind::Uretprobe ||
                     probe.kind == ProbeKind::Usdt;
  a.pid = per_process && !q.pid_tree ? q.pid : -1;  // -c: children too, filtered in the program
  a.perf_type = probe.perf_type;
  a.perf_config = probe.perf_config;
  a.sample_period = probe.sample_period;
  a.one_cpu = probe.one_cpu;
  a.sample_freq = probe.sample_freq;
  return a;
}

// The functions of one query so far: their names by sharing key (FunctionGen::sharing_key), and
// how many more probes each one is attached to.
struct SharedFunctions {
  std::map<std::string, std::string> by_key;
  std::map<std::string, int> more_probes;
};

// One function per probe: writes it and records how the runtime attaches it. A function equal to
// one the query already has is not written again (""): the probe attaches that one.
// Every function's body is also kept, with where it attaches, in `bodies` (for fusion),
// except one that both ends and begins a span.
Result<std::string> probe_function(const CheckedQuery& q, const QueryLayout& layout,
                                   ProgramState& state, const ProbeRef& probe, int index, Role role,
                                   PlanQuery& plan, SharedFunctions& shared, size_t query_index,
                                   std::vector<AttachedBody>& bodies) {
  ProbeEnv env;
  env.probe = &probe;
  env.index = index;
  env.role = role;
  if (role == Role::Main && codegen::also_begins(q, probe))
    for (size_t k = 0; k < q.span->begin.size(); ++k)
      if (q.span->begin[k].spec == probe.spec) env.begin_index = static_cast<int>(k);
  env.function = fmt::format("{}_{}{}", layout.prefix,
                             role == Role::Main ? 'p' : role == Role::SpanBegin ? 'b' : 'e', index);
  env.ctx = probe.kind == ProbeKind::Tracepoint ? "args" : "ctx";
  switch (probe.kind) {
    case ProbeKind::Tracepoint: {
      auto tp = tracepoint_for(probe, state);
      if (!tp) return std::unexpected(tp.error());
      env.tracepoint = *tp;
      break;
    }
    case ProbeKind::Profile:
    case ProbeKind::Software:
    case ProbeKind::Hardware:
      state.needs_perf_event = true;
      break;
    default:
      state.needs_ptrace = true;
      break;
  }
  codegen::FunctionGen gen(q, layout, state, env);
  auto text = gen.generate();
  if (!text) return text;
  // A body that may run on a raw_syscalls tracepoint (on its own, fused or moved there) is
  // written a second time for its raw tracepoint, reading the call's registers (fusion.h).
  // A kernel stack taken on raw_syscalls would show its tracepoint's frames, not syscalls:*'s.
  std::optional<codegen::SyscallHome> home;
  bool on_raw_syscalls = false;
  if (probe.kind == ProbeKind::Tracepoint && probe.format && !layout.uses_stacks &&
      env.begin_index < 0) {
    home = codegen::syscall_home(*probe.format, q.syscall_compat_offset);
    on_raw_syscalls = codegen::raw_syscalls_record(*probe.format);
  }
  std::optional<codegen::FunctionGen> raw;
  std::string raw_text;
  // (Without the registers a body still has its raw version where it reads none of them.)
  if ((home && q.syscall_regs) || on_raw_syscalls) {
    ProbeEnv raw_env = env;
    raw_env.ctx = "ctx";
    bool enter = home ? home->tracepoint == "raw_syscalls:sys_enter" : probe.format->name == "sys_enter";
    raw_env.raw_syscall = enter ? codegen::RawSyscall::Enter : codegen::RawSyscall::Exit;
    raw.emplace(q, layout, state, raw_env);
    auto generated = raw->generate();
    if (generated && raw->raw_syscall_ok())
      raw_text = std::move(*generated);
    else
      raw.reset();
  }
  // On raw_syscalls itself, a function that reads the record runs as the raw tracepoint: the
  // kernel then builds no record (the registers a field needs cost less than the record).
  bool alone_raw = raw && on_raw_syscalls && !gen.raw_tracepoint_ok();
  const codegen::FunctionGen& chosen = alone_raw ? *raw : gen;
  if (alone_raw) {
    text = raw_text;
    codegen::use_helper(state.helpers, codegen::CHelper::RawSyscalls);
  }
  auto [it, first] = shared.by_key.emplace(chosen.sharing_key(), env.function);
  plan.attaches.push_back(attach_of(q, probe, it->second));
  plan.attaches.back().raw_tracepoint_ok =
      probe.kind == ProbeKind::Tracepoint && (alone_raw || gen.raw_tracepoint_ok());
  plan.attaches.back().raw_record = alone_raw;
  plan.attaches.back().attach_cookie = gen.uses_attach_cookie();
  plan.attaches.back().probe_index = static_cast<uint64_t>(index);
  // A function that ends a span and then begins one runs two parts (each may return early):
  // its body lines are the end's alone, so it keeps a program of its own, unfused.
  if (env.begin_index < 0) {
    AttachedBody body;
    body.query = query_index;
    body.attach = plan.attaches.size() - 1;
    body.comment = text->substr(0, text->find('\n'));
    body.lines = gen.body_lines();
    if (raw) {
      body.raw_lines = raw->body_lines();
      body.syscall_regs = q.syscall_regs;
    }
    body.home = home;
    body.raw_syscalls = on_raw_syscalls;
    bodies.push_back(std::move(body));
  }
  if (!first) {
    ++shared.more_probes[it->second];
    return std::string();
  }
  if (env.tracepoint) state.tracepoints_used.insert(probe.format->category + ":" + probe.format->name);
  return text;
}

// A query's C: its declarations, then its functions (by name), which are kept only while an
// attach still names them (fusion moves attaches to fused functions).
struct QueryText {
  std::string declarations;
  std::vector<std::pair<std::string, std::string>> functions;
};

Result<QueryText> query_program(const CheckedQuery& q, int index, ProgramState& state,
                                PlanQuery& plan, std::vector<AttachedBody>& bodies) {
  if (q.probes.empty()) return error_at(q.loc, fmt::format("query '{}' has no probe", q.name));
  auto layout = codegen::layout_query(q, index);
  if (!layout) return std::unexpected(layout.error());
  plan = codegen::plan_query(q, *layout);
  SharedFunctions shared;
  std::vector<std::pair<std::string, std::string>> written;  // function name, text
  auto add = [&](const std::string& text) {
    if (!text.empty()) written.emplace_back(plan.attaches.back().function, text);
  };
  // Entry programs first: a uretprobe only reports the calls that began after it was attached,
  // so with every entry program attached before it, each return it reports had its entry seen.
  std::vector<ProbeRef> entries = codegen::entry_probes(q);
  for (size_t k = 0; k < entries.size(); ++k) {
    auto f = probe_function(q, *layout, state, entries[k], static_cast<int>(k), Role::Entry, plan,
                            shared, static_cast<size_t>(index), bodies);
    if (!f) return std::unexpected(f.error());
    add(*f);
  }
  if (q.span) {
    if (q.span->begin.empty() || q.span->begin_key.empty())
      return error_at(q.loc, fmt::format("span query '{}' has no begin probe or key", q.name));
    for (size_t k = 0; k < q.span->begin.size(); ++k) {
      bool ends_too = std::any_of(q.probes.begin(), q.probes.end(), [&](const ProbeRef& p) {
        return p.spec == q.span->begin[k].spec;
      });
      if (ends_too) continue;  // its end function begins the span too
      auto f = probe_function(q, *layout, state, q.span->begin[k], static_cast<int>(k),
                              Role::SpanBegin, plan, shared, static_cast<size_t>(index), bodies);
      if (!f) return std::unexpected(f.error());
      add(*f);
    }
  }
  for (size_t k = 0; k < q.probes.size(); ++k) {
    auto f = probe_function(q, *layout, state, q.probes[k], static_cast<int>(k), Role::Main, plan,
                            shared, static_cast<size_t>(index), bodies);
    if (!f) return std::unexpected(f.error());
    add(*f);
  }
  QueryText out;
  for (auto& [name, text] : written) {
    if (int more = shared.more_probes[name]; more > 0) {  // on its opening comment
      size_t end = text.find(" */\n");
      text = text.substr(0, end) +
             fmt::format(" and {} more probe{} of the query: the same program", more,
                         more == 1 ? "" : "s") +
             text.substr(end);
    }
    out.functions.emplace_back(name, "\n" + text);
  }
  out.declarations = codegen::query_declarations(q, *layout, state.dialect, state.maps);
  return out;
}

}  // namespace

namespace {

// What a one-pass clang compile of plain C cannot do without libbcc: USDT argument readers
// (libbcc writes them from the binaries' notes), and the pt_regs of kprobes and uprobes where
// the prelude does not spell them out (codegen::plain_c_has_pt_regs).
bool plain_c_possible(const CheckedProgram& program) {
  for (const auto& q : program.queries) {
    auto plain_kind = [](const ProbeRef& p) {
      if (p.kind == ProbeKind::Usdt) return false;
      bool pt_regs = p.kind == ProbeKind::Kprobe || p.kind == ProbeKind::Kretprobe ||
                     p.kind == ProbeKind::Uprobe || p.kind == ProbeKind::Uretprobe;
      return !pt_regs || codegen::plain_c_has_pt_regs();
    };
    for (const auto& p : q.probes)
      if (!plain_kind(p)) return false;
    if (q.span)
      for (const auto& p : q.span->begin)
        if (!plain_kind(p)) return false;
  }
  return true;
}

// The whole program in one dialect; fills `plan`'s queries and constants.
Result<std::string> program_text(const CheckedProgram& program, codegen::Dialect dialect,
                                 Plan& plan) {
  ProgramState state;
  state.dialect = dialect;
  std::vector<QueryText> texts;
  std::vector<AttachedBody> bodies;
  auto tree = codegen::process_tree_program(program, state);
  if (!tree) return std::unexpected(tree.error());
  for (size_t i = 0; i < program.queries.size(); ++i) {
    PlanQuery pq;
    auto text = query_program(program.queries[i], static_cast<int>(i), state, pq, bodies);
    if (!text) return std::unexpected(text.error());
    texts.push_back(std::move(*text));
    plan.queries.push_back(std::move(pq));
  }
  std::string fused = codegen::fuse_by_attach_point(bodies, plan, state);
  std::set<std::string> attached;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches) attached.insert(a.function);
  std::string queries;
  for (const auto& text : texts) {
    queries += "\n" + text.declarations;
    for (const auto& [name, function] : text.functions)
      if (attached.count(name)) queries += function;
  }
  queries += fused;
  if (!tree->text.empty()) {  // the trackers attach with the first query that needs them
    queries = "\n" + tree->text + queries;
    for (auto& pq : plan.queries)
      if (pq.name == tree->owner) {
        pq.attaches.insert(pq.attaches.end(), tree->attaches.begin(), tree->attaches.end());
        break;
      }
  }
  plan.constants = state.constants;
  plan.maps = state.maps;
  std::string file = program.queries.empty() ? "" : program.queries[0].loc.file;
  std::string c = fmt::format("/* Generated by bpfql from {} ({} quer{}). */\n",
                              c_names::comment_text(file), program.queries.size(),
                              program.queries.size() == 1 ? "y" : "ies");
  if (dialect == codegen::Dialect::Plain) c += codegen::plain_c_prelude();
  if (state.needs_ptrace && dialect == codegen::Dialect::Bcc)
    c += "#include <uapi/linux/ptrace.h>\n";
  // Perf event programs only pass their context on (to get_stackid): a declaration spares the
  // compile of <uapi/linux/bpf_perf_event.h>, which pulls in most of the kernel's headers.
  if (state.needs_perf_event && dialect == codegen::Dialect::Bcc)
    c += "struct bpf_perf_event_data;\n";
  if (!state.helpers.empty()) c += "\n" + codegen::helper_definitions(state.helpers);
  for (const auto& name : state.tracepoint_order)
    if (state.tracepoints_used.count(name)) c += "\n" + state.tracepoints.at(name).declaration;
  return c + queries;
}

}  // namespace

Result<Plan> generate_plan(const CheckedProgram& program) {
  Plan plan;
  auto bcc = program_text(program, codegen::Dialect::Bcc, plan);
  if (!bcc) return std::unexpected(bcc.error());
  plan.c_source = std::move(*bcc);
  if (plain_c_possible(program)) {
    Plan again;  // the same queries, maps and constants
    auto plain = program_text(program, codegen::Dialect::Plain, again);
    if (!plain) return std::unexpected(plain.error());
    plan.c_plain = std::move(*plain);
  }
  return plan;
}

}  // namespace bpfql
