#include "compiler/codegen/process_tree.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/helpers.h"
#include "compiler/codegen/maps.h"
#include "compiler/codegen/tracepoint.h"

namespace bpfql::codegen {
namespace {

// A run of a thousand-process build stays far below this; a full map is never silent for the
// command itself (its pid is a constant), only for a descendant beyond the limit.
constexpr uint64_t kMaxTracked = 32768;

// The same slot as FunctionGen::runtime_constant gives the queries' filters ("-c", the pid).
std::string root_constant(ProgramState& state, uint64_t pid) {
  auto& constants = state.constants;
  auto same = std::ranges::find_if(
      constants, [&](const PlanConstant& c) { return c.value == pid && c.source == "-c"; });
  size_t slot = static_cast<size_t>(same - constants.begin());
  if (same == constants.end()) constants.push_back(PlanConstant{pid, "-c"});
  use_helper(state.helpers, CHelper::RuntimeConstant);
  return fmt::format("BPFQL_CONST({:#x} /* -c */)", kRuntimeConstantMagic | slot);
}

Result<const TracepointStruct*> struct_for(const ProbeRef& probe, ProgramState& state) {
  if (!probe.format) return error_at(probe.loc, "sched_process_fork has no format here");
  std::string full = probe.format->category + ":" + probe.format->name;
  auto it = state.tracepoints.find(full);
  if (it == state.tracepoints.end()) {
    auto tp = tracepoint_struct(*probe.format, probe.loc, state.tracepoint_tags);
    if (!tp) return std::unexpected(tp.error());
    it = state.tracepoints.emplace(full, std::move(*tp)).first;
    state.tracepoint_order.push_back(full);
  }
  state.tracepoints_used.insert(full);
  return &it->second;
}

std::string signature(Dialect d, const std::string& name, const TracepointStruct& tp) {
  return d == Dialect::Bcc ? fmt::format("int {}(struct {} *args)", name, tp.tag)
                           : fmt::format("BPFQL_FUNCTION({})(struct {} *args)", name, tp.tag);
}

PlanAttach attach(const ProbeRef& probe, const std::string& function) {
  PlanAttach a;
  a.kind = ProbeKind::Tracepoint;
  a.function = function;
  a.spec = probe.spec;
  a.tracepoint = probe.format->category + ":" + probe.format->name;
  return a;
}

}  // namespace

std::string process_tree_lookup(Dialect d, const std::string& key) {
  return map_lookup(d, kProcessTreeMap, key);
}

Result<ProcessTree> process_tree_program(const CheckedProgram& program, ProgramState& state) {
  ProcessTree tree;
  auto first = std::ranges::find_if(program.queries, &CheckedQuery::pid_tree);
  if (first == program.queries.end()) return tree;
  if (first->tree_probes.size() != 2)
    return error_at(first->loc, "-c needs the sched:sched_process_fork and sched_process_exit "
                                "tracepoints to follow the command's children");
  const ProbeRef& fork = first->tree_probes[0];
  const ProbeRef& exit = first->tree_probes[1];
  auto fork_tp = struct_for(fork, state);
  if (!fork_tp) return std::unexpected(fork_tp.error());
  if (!(*fork_tp)->readable.count("child_pid"))
    return error_at(fork.loc, "sched_process_fork has no child_pid field on this kernel");
  auto exit_tp = struct_for(exit, state);
  if (!exit_tp) return std::unexpected(exit_tp.error());

  MapDecl map{MapKind::Hash, kProcessTreeMap, "u32", "u8", kMaxTracked, 4, 1};
  state.maps.push_back(plan_map(map));
  Dialect d = state.dialect;
  std::string root = root_constant(state, static_cast<uint64_t>(first->pid));
  tree.owner = first->name;
  tree.text = fmt::format(
      "/* -c: the command (pid {pid}) and the processes it starts, followed through forks */\n"
      "{decl}\n\n"
      "/* a child of the command or of one of its descendants is tracked from its fork */\n"
      "{fork_sig} {{\n"
      "  u32 parent = (u32)(bpf_get_current_pid_tgid() >> 32);\n"
      "  if (parent != {root} && !{lookup})\n"
      "    return 0;\n"
      "  u32 child = (u32)args->child_pid;\n"
      "  u8 one = 1;\n"
      "  {update};\n"
      "  return 0;\n"
      "}}\n\n"
      "/* and forgotten when it exits (its pid may be given to an unrelated process next) */\n"
      "{exit_sig} {{\n"
      "  u32 tid = (u32)bpf_get_current_pid_tgid();\n"
      "  {remove};\n"
      "  return 0;\n"
      "}}\n",
      fmt::arg("pid", first->pid), fmt::arg("decl", map_declaration(d, map)),
      fmt::arg("fork_sig", signature(d, "bpfql_tree_fork", **fork_tp)), fmt::arg("root", root),
      fmt::arg("lookup", map_lookup(d, kProcessTreeMap, "&parent")),
      fmt::arg("update", map_update(d, kProcessTreeMap, "&child", "&one")),
      fmt::arg("exit_sig", signature(d, "bpfql_tree_exit", **exit_tp)),
      fmt::arg("remove", map_delete(d, kProcessTreeMap, "&tid")));
  tree.attaches = {attach(fork, "bpfql_tree_fork"), attach(exit, "bpfql_tree_exit")};
  return tree;
}

}  // namespace bpfql::codegen
