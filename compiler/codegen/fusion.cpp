#include "compiler/codegen/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/syscall_names.h"
#include "compiler/text.h"

namespace bpfql::codegen {
namespace {

// `raw`: the raw tracepoint's context (RawSyscall::Enter or Exit) instead of the record.
std::string fused_signature(const std::string& name, const std::string& tag, Dialect dialect,
                            RawSyscall raw) {
  std::string head = dialect == Dialect::Bcc ? "int " + name : "BPFQL_FUNCTION(" + name + ")";
  if (raw != RawSyscall::None)
    return fmt::format("{}({} *ctx)", head, raw_syscalls_context(raw == RawSyscall::Enter));
  return fmt::format("{}(struct {} *args)", head, tag);
}

// The index of the body's first line that can leave it early (a filter, a failed lookup).
size_t first_exit(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("return 0;") != std::string::npos) return i;
  return lines.size();
}

// One member of a fused function: a body, and whether it moved to its syscall home (and then
// runs only for its system call).
struct Member {
  const AttachedBody* body = nullptr;
  bool moved = false;
  std::string own_tag;  // moved: the record struct of its own tracepoint, which it reads through
  // The statements it runs: its body's lines, or their raw tracepoint version (raw_lines).
  const std::vector<std::string>& lines(bool raw) const { return raw ? *body->raw_lines : body->lines; }
};

// The reads to do once, at the top of the fused function: each read by two bodies or more, by
// one of them before its first exit (so every event paid for it already). A moved body's reads
// all wait for its system call's number.
std::vector<std::string> reads_to_hoist(const std::vector<Member>& members, bool raw,
                                       const std::vector<std::string>& candidates) {
  std::vector<std::string> hoisted;
  for (const auto& read : candidates) {
    int readers = 0;
    bool unconditional = false;
    for (const Member& member : members) {
      const std::vector<std::string>& lines = member.lines(raw);
      size_t exit = member.moved ? 0 : first_exit(lines);
      for (size_t i = 0; i < lines.size(); ++i)
        if (trim(lines[i]) == read) {
          ++readers;
          unconditional = unconditional || i < exit;
          break;
        }
    }
    if (readers >= 2 && unconditional) hoisted.push_back(read);
  }
  return hoisted;
}

// The two tests that run a moved body only for its own events (SyscallHome), leaving for `label`
// otherwise; `args` is still the raw_syscalls record here. `shared`: another moved body of the
// program has the same system call, so the TS_COMPAT bit is read by the first of them to get past
// the number and kept in `bpfql_compat` (-1: not read yet) for the others.
std::string home_guard(const SyscallHome& home, const std::string& label,
                       const std::string& number, bool shared) {
  std::string read = fmt::format(
      "      u32 bpfql_status = *(u32 *)((char *)bpf_get_current_task_btf() + {});"
      "  /* ->thread_info.status */\n",
      home.compat_offset);
  auto leave_if = [&](const std::string& indent, const std::string& compat) {
    return fmt::format("{}if ({}) goto {};  /* TS_COMPAT: a 32-bit call, which syscalls:* events "
                       "leave out */\n",
                       indent, compat, label);
  };
  std::string out = fmt::format("    if ({} != {}) goto {};  /* not its system call */\n", number,
                                home.nr, label);
  if (!shared) return out + "    {\n" + read + leave_if("      ", "bpfql_status & 0x0002") + "    }\n";
  return out + "    if (bpfql_compat < 0) {  /* read once for this system call's bodies */\n" +
         read + "      bpfql_compat = bpfql_status & 0x0002;\n    }\n" +
         leave_if("    ", "bpfql_compat");
}

// `bpf_get_current_comm(dest, sizeof(dest));`, a body's read of comm (FunctionGen::emit_string):
// its destination, or "" for any other line.
std::string comm_destination(const std::string& line) {
  static const std::string head = "bpf_get_current_comm(";
  std::string_view text = trim(line);
  if (!text.starts_with(head) || !text.ends_with("));")) return "";
  std::string_view args = text.substr(head.size(), text.size() - head.size() - 3);
  size_t comma = args.find(", sizeof(");
  if (comma == std::string_view::npos) return "";
  std::string_view dest = args.substr(0, comma);
  if (args.substr(comma + 9) != dest) return "";
  return std::string(dest);
}

// The moved bodies that take comm from bpfql_comm (BPFQL_SHARED_COMM): those of a system call
// (`moved_by_call`: the moved members of each) whose moved bodies read comm twice or more. They
// run on the same events, so the first to get there reads it for the others. A body that runs on
// every event keeps its own read: it would pay a copy on each of them for a read saved only on
// its neighbours' calls.
std::vector<bool> comm_sharers(const std::vector<Member>& members,
                               const std::map<int64_t, std::vector<size_t>>& moved_by_call, bool raw) {
  std::vector<bool> shares(members.size(), false);
  for (const auto& [nr, of_call] : moved_by_call) {
    std::vector<size_t> readers;
    for (size_t m : of_call) {
      const auto& lines = members[m].lines(raw);
      if (std::any_of(lines.begin(), lines.end(),
                      [](const std::string& l) { return !comm_destination(l).empty(); }))
        readers.push_back(m);
    }
    if (readers.size() >= 2)
      for (size_t m : readers) shares[m] = true;
  }
  return shares;
}

// One fused function over `members` (bodies of different queries, in query order).
// `originals`: the function each body had alone (named in its block's opening comment).
// `raw`: written for the raw_syscalls raw tracepoint, with each body's raw_lines; `exit_nr`:
// the read of the number at sys_exit there (raw_exit_number_read).
std::string fused_function(const std::string& name, const std::string& tracepoint,
                           const std::string& tag, const std::vector<Member>& members,
                           const std::vector<std::string>& originals, Dialect dialect,
                           RawSyscall raw, const std::string& exit_nr,
                           std::set<CHelper>& helpers) {
  bool is_raw = raw != RawSyscall::None;
  std::string out = fmt::format(
      "/* tracepoint {}: {} queries in one program, each body in turn (fused: one attach, {}) */\n",
      tracepoint, members.size(),
      is_raw ? "as its raw tracepoint: the kernel builds no record" : "one record");
  out += fused_signature(name, tag, dialect, raw) + " {\n";
  bool any_moved = std::any_of(members.begin(), members.end(), [](const Member& m) { return m.moved; });
  if (any_moved && !is_raw) out += "  void *bpfql_record = args;  /* for the bodies moved here */\n";
  std::vector<std::string> candidates = hoistable_reads();
  if (!exit_nr.empty()) candidates.emplace_back(trim(exit_nr));
  auto hoisted = reads_to_hoist(members, is_raw, candidates);
  // A moved body's first test reads the number at sys_exit: every event needs it.
  if (!exit_nr.empty() && any_moved &&
      std::find(hoisted.begin(), hoisted.end(), trim(exit_nr)) == hoisted.end())
    hoisted.insert(hoisted.begin(), std::string(trim(exit_nr)));
  for (const auto& read : hoisted) out += "  " + read + "  /* read once, for every query */\n";
  std::map<int64_t, std::vector<size_t>> moved_by_call;  // the moved members of each system call
  for (size_t m = 0; m < members.size(); ++m)
    if (members[m].moved) moved_by_call[members[m].body->home->nr].push_back(m);
  bool any_shared = std::any_of(moved_by_call.begin(), moved_by_call.end(),
                                [](const auto& entry) { return entry.second.size() > 1; });
  if (any_shared) out += "  s32 bpfql_compat = -1;  /* the call's TS_COMPAT bit, once read */\n";
  std::vector<bool> shares_comm = comm_sharers(members, moved_by_call, is_raw);
  if (std::find(shares_comm.begin(), shares_comm.end(), true) != shares_comm.end()) {
    use_helper(helpers, CHelper::SharedComm);
    out += "  char bpfql_comm[16] __attribute__((aligned(8)));  /* comm, once read */\n"
           "  u32 bpfql_comm_read = 0;\n";
  }
  const std::string ctx = is_raw ? "ctx" : "args";
  std::string number = raw == RawSyscall::Enter ? "ctx->id"
                       : raw == RawSyscall::Exit ? "bpfql_exit_nr"
                                                 : "args->id";
  for (size_t m = 0; m < members.size(); ++m) {
    const AttachedBody& body = *members[m].body;
    std::string label = fmt::format("{}_{}_end", name, m);
    bool jumps = false;
    out += "  " + body.comment + "\n  {  /* " + originals[m] +
           (members[m].moved ? ", moved here from its own tracepoint" : "") + " */\n";
    // Each body starts from a context pointer clang cannot relate to the previous body's: it
    // would otherwise keep `args + offset` of a field two bodies read in a register, and the
    // verifier refuses a load through a modified context pointer.
    if (m > 0) out += "    BPFQL_OPAQUE(" + ctx + ");\n";
    if (members[m].moved) {
      out += home_guard(*body.home, label, number, moved_by_call.at(body.home->nr).size() > 1);
      jumps = true;
      if (!is_raw) {
        // The same record, read as its own tracepoint's (the layouts agree: SyscallHome).
        out += fmt::format("    struct {0} *args = (struct {0} *)bpfql_record;\n",
                           members[m].own_tag);
        out += "    BPFQL_OPAQUE(args);\n";
      }
    }
    for (const auto& l : members[m].lines(is_raw)) {
      if (std::find(hoisted.begin(), hoisted.end(), trim(l)) != hoisted.end()) continue;
      std::string text = l;
      if (shares_comm[m]) {
        std::string dest = comm_destination(l);
        if (!dest.empty())
          text = l.substr(0, l.find_first_not_of(' ')) + "BPFQL_SHARED_COMM(" + dest + ");";
      }
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

std::optional<SyscallHome> syscall_home(const TracepointFormat& format,
                                        std::optional<int> compat_offset) {
  if (format.category != "syscalls" || !compat_offset) return std::nullopt;
  bool enter = format.name.starts_with("sys_enter_");
  if (!enter && !format.name.starts_with("sys_exit_")) return std::nullopt;
  auto nr = native_syscall_number(std::string_view(format.name).substr(enter ? 10 : 9));
  if (!nr) return std::nullopt;
  for (const auto& f : format.fields) {
    bool fits;
    if (f.name.starts_with("common_"))
      fits = f.offset + f.size <= 8;
    else if (f.name == "__syscall_nr")  // the low half of raw_syscalls' `long id`
      fits = f.offset == 8 && f.size == 4;
    else if (enter)  // an argument: one of raw_syscalls' `unsigned long args[6]`
      fits = f.size == 8 && f.offset >= 16 && f.offset + f.size <= 64 && f.offset % 8 == 0;
    else
      fits = f.name == "ret" && f.offset == 16 && f.size == 8;
    if (!fits) return std::nullopt;
  }
  return SyscallHome{enter ? "raw_syscalls:sys_enter" : "raw_syscalls:sys_exit", *nr,
                     *compat_offset};
}

std::string raw_syscalls_context(bool enter) {
  return enter ? "struct bpfql_raw_sys_enter" : "struct bpfql_raw_sys_exit";
}

std::string raw_exit_number_read(const SyscallRegs& regs) {
  return fmt::format(
      "u64 bpfql_exit_nr = bpfql_syscall_reg(ctx->regs, {});  /* regs->orig_ax: the call's "
      "number */",
      regs.nr);
}

bool raw_syscalls_record(const TracepointFormat& format) {
  if (format.category != "raw_syscalls" || (format.name != "sys_enter" && format.name != "sys_exit"))
    return false;
  bool enter = format.name == "sys_enter";
  const TracepointField* id = format.field("id");
  const TracepointField* rest = format.field(enter ? "args" : "ret");
  return id && id->offset == 8 && id->size == 8 && rest && rest->offset == 16 &&
         rest->size == (enter ? 48 : 8);
}

std::string fuse_by_attach_point(const std::vector<AttachedBody>& bodies, Plan& plan,
                                 ProgramState& state) {
  auto fusable = [&](const AttachedBody& b) {
    const PlanAttach& a = plan.queries[b.query].attaches[b.attach];
    // An attach with a cookie takes its own probe index from it: a program of its own.
    return a.kind == ProbeKind::Tracepoint && !a.tracepoint.empty() && !a.attach_cookie &&
           state.tracepoints.count(a.tracepoint);
  };
  // The bodies each query has on each tracepoint where it stays, and the moves it could make.
  std::map<std::string, std::map<size_t, int>> staying, moving;
  for (const auto& b : bodies) {
    if (!fusable(b)) continue;
    ++staying[plan.queries[b.query].attaches[b.attach].tracepoint][b.query];
    if (b.home) ++moving[b.home->tracepoint][b.query];
  }
  // The queries whose only body on a raw_syscalls tracepoint reads its record there: the
  // tracepoint is traced anyway, and a moved body joins that body's group.
  std::map<std::string, std::set<size_t>> anchors;
  for (const auto& b : bodies) {
    const std::string& tracepoint = plan.queries[b.query].attaches[b.attach].tracepoint;
    if (fusable(b) && b.raw_syscalls && staying[tracepoint][b.query] == 1)
      anchors[tracepoint].insert(b.query);
  }
  // A body moves to its home where another query anchors it, and where its own query has no
  // other body.
  auto moves = [&](const AttachedBody& b) {
    if (!b.home || !state.tracepoints.count(b.home->tracepoint) ||
        !state.tracepoints.at(b.home->tracepoint).readable.count("id"))
      return false;
    const std::string& home = b.home->tracepoint;
    if (staying[home].count(b.query) || moving[home][b.query] != 1) return false;
    const std::set<size_t>& others = anchors[home];
    return others.size() > others.count(b.query);
  };
  // By tracepoint (a moved body's home), in the order of first use; then by query.
  std::vector<std::string> order;
  std::map<std::string, std::map<size_t, std::vector<Member>>> groups;
  for (const auto& b : bodies) {
    if (!fusable(b)) continue;
    Member member{&b, moves(b), ""};
    if (member.moved)
      member.own_tag = state.tracepoints.at(plan.queries[b.query].attaches[b.attach].tracepoint).tag;
    const std::string& tracepoint =
        member.moved ? b.home->tracepoint : plan.queries[b.query].attaches[b.attach].tracepoint;
    auto [it, first] = groups.try_emplace(tracepoint);
    if (first) order.push_back(tracepoint);
    it->second[b.query].push_back(member);
  }
  std::string out;
  int fused = 0;
  for (const auto& tracepoint : order) {
    std::vector<Member> members;
    for (const auto& [query, of_query] : groups[tracepoint])
      if (of_query.size() == 1) members.push_back(of_query.front());
    if (members.size() < 2) continue;  // a moved body always has company (moves())
    std::string name = fmt::format("fused{}", fused++);
    bool raw_ok = true;
    for (const Member& m : members)
      raw_ok = raw_ok && !m.moved &&
               plan.queries[m.body->query].attaches[m.body->attach].raw_tracepoint_ok;
    // On raw_syscalls, the raw tracepoint whenever every body has a raw version.
    RawSyscall raw = RawSyscall::None;
    bool all_raw = std::all_of(members.begin(), members.end(),
                               [](const Member& m) { return m.body->raw_lines.has_value(); });
    if (all_raw && (tracepoint == "raw_syscalls:sys_enter" || tracepoint == "raw_syscalls:sys_exit"))
      raw = tracepoint == "raw_syscalls:sys_enter" ? RawSyscall::Enter : RawSyscall::Exit;
    std::string exit_nr;
    // The number at sys_exit, from the registers: some member that may read it has them (a body
    // that reads a register has no raw version without them).
    if (raw == RawSyscall::Exit)
      for (const Member& m : members)
        if (m.body->syscall_regs) {
          exit_nr = raw_exit_number_read(*m.body->syscall_regs);
          break;
        }
    std::vector<std::string> originals;
    for (const Member& m : members) {
      PlanAttach& a = plan.queries[m.body->query].attaches[m.body->attach];
      originals.push_back(a.function);
      if (m.moved) {
        state.tracepoints_used.insert(a.tracepoint);  // its body reads through that struct
        a.tracepoint = tracepoint;
      }
      a.function = name;
      a.raw_tracepoint_ok = raw_ok || raw != RawSyscall::None;
      a.raw_record = raw != RawSyscall::None;
    }
    const std::string& tag = state.tracepoints.at(tracepoint).tag;
    state.tracepoints_used.insert(tracepoint);
    use_helper(state.helpers, CHelper::Opaque);
    if (raw != RawSyscall::None) use_helper(state.helpers, CHelper::RawSyscalls);
    out += "\n" + fused_function(name, tracepoint, tag, members, originals, state.dialect, raw,
                                 exit_nr, state.helpers);
  }
  return out;
}

}  // namespace bpfql::codegen
