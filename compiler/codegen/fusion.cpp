#include "compiler/codegen/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/text.h"

namespace bpfql::codegen {
namespace {

std::string fused_signature(const std::string& name, const std::string& tag, Dialect dialect) {
  std::string head = dialect == Dialect::Bcc ? "int " + name : "BPFQL_FUNCTION(" + name + ")";
  return fmt::format("{}(struct {} *args)", head, tag);
}

// The index of the body's first line that can leave it early (a filter, a failed lookup).
size_t first_exit(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("return 0;") != std::string::npos) return i;
  return lines.size();
}

// The reads to do once, at the top of the fused function: each read by two bodies or more, by
// one of them before its first exit (so every event paid for it already).
std::vector<std::string> reads_to_hoist(const std::vector<const AttachedBody*>& members) {
  std::vector<std::string> hoisted;
  for (const auto& read : hoistable_reads()) {
    int readers = 0;
    bool unconditional = false;
    for (const AttachedBody* b : members) {
      size_t exit = first_exit(b->lines);
      for (size_t i = 0; i < b->lines.size(); ++i)
        if (trim(b->lines[i]) == read) {
          ++readers;
          unconditional = unconditional || i < exit;
          break;
        }
    }
    if (readers >= 2 && unconditional) hoisted.push_back(read);
  }
  return hoisted;
}

// One fused function over `members` (bodies of different queries, in query order).
// `originals`: the function each body had alone (named in its block's opening comment).
std::string fused_function(const std::string& name, const std::string& tracepoint,
                           const std::string& tag, const std::vector<const AttachedBody*>& members,
                           const std::vector<std::string>& originals, Dialect dialect) {
  std::string out = fmt::format(
      "/* tracepoint {}: {} queries in one program, each body in turn (fused: one attach, one "
      "record) */\n",
      tracepoint, members.size());
  out += fused_signature(name, tag, dialect) + " {\n";
  auto hoisted = reads_to_hoist(members);
  for (const auto& read : hoisted) out += "  " + read + "  /* read once, for every query */\n";
  for (size_t m = 0; m < members.size(); ++m) {
    const AttachedBody& body = *members[m];
    std::string label = fmt::format("{}_{}_end", name, m);
    bool jumps = false;
    out += "  " + body.comment + "\n  {  /* " + originals[m] + " */\n";
    // Each body starts from a record pointer clang cannot relate to the previous body's: it
    // would otherwise keep `args + offset` of a field two bodies read in a register, and the
    // verifier refuses a load through a modified context pointer.
    if (m > 0) out += "    BPFQL_OPAQUE(args);\n";
    for (const auto& l : body.lines) {
      if (std::find(hoisted.begin(), hoisted.end(), trim(l)) != hoisted.end()) continue;
      std::string text = l;
      for (size_t at = text.find("return 0;"); at != std::string::npos;
           at = text.find("return 0;", at)) {
        std::string jump = "goto " + label + ";";
        text.replace(at, 9, jump);
        at += jump.size();
        jumps = true;
      }
      out += "  " + text + "\n";
    }
    out += "  }\n";
    if (jumps) out += label + ":;\n";
  }
  out += "  return 0;\n}\n";
  return out;
}

}  // namespace

const std::vector<std::string>& hoistable_reads() {
  static const std::vector<std::string> reads = {
      "u64 pid_tgid = bpf_get_current_pid_tgid();",
      "u64 uid_gid = bpf_get_current_uid_gid();",
      "u64 cgroup_id = bpf_get_current_cgroup_id();",
      "u32 cpu = bpf_get_smp_processor_id();",
      "u64 ts = bpf_ktime_get_ns();",
  };
  return reads;
}

std::string fuse_by_attach_point(const std::vector<AttachedBody>& bodies, Plan& plan,
                                 ProgramState& state) {
  // By tracepoint, in the order of first use; then by query.
  std::vector<std::string> order;
  std::map<std::string, std::map<size_t, std::vector<const AttachedBody*>>> groups;
  for (const auto& b : bodies) {
    const PlanAttach& a = plan.queries[b.query].attaches[b.attach];
    if (a.kind != ProbeKind::Tracepoint || a.tracepoint.empty()) continue;
    if (a.attach_cookie) continue;  // its cookie is its own probe index: a program of its own
    if (!state.tracepoints.count(a.tracepoint)) continue;
    auto [it, first] = groups.try_emplace(a.tracepoint);
    if (first) order.push_back(a.tracepoint);
    it->second[b.query].push_back(&b);
  }
  std::string out;
  int fused = 0;
  for (const auto& tracepoint : order) {
    std::vector<const AttachedBody*> members;
    for (const auto& [query, of_query] : groups[tracepoint])
      if (of_query.size() == 1) members.push_back(of_query.front());
    if (members.size() < 2) continue;
    std::string name = fmt::format("fused{}", fused++);
    bool raw_ok = true;
    for (const AttachedBody* b : members)
      raw_ok = raw_ok && plan.queries[b->query].attaches[b->attach].raw_tracepoint_ok;
    std::vector<std::string> originals;
    for (const AttachedBody* b : members) {
      PlanAttach& a = plan.queries[b->query].attaches[b->attach];
      originals.push_back(a.function);
      a.function = name;
      a.raw_tracepoint_ok = raw_ok;
    }
    const std::string& tag = state.tracepoints.at(tracepoint).tag;
    state.tracepoints_used.insert(tracepoint);
    use_helper(state.helpers, CHelper::Opaque);
    out += "\n" + fused_function(name, tracepoint, tag, members, originals, state.dialect);
  }
  return out;
}

}  // namespace bpfql::codegen
