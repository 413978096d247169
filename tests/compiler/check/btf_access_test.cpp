// Kernel structs through BTF (fixture: tests/fixtures/btf/structs.txt, this kernel's BTF), casts,
// the conditional, indexing and join(): what parses, what it types as, and every error a user
// can make, with its position.
#include <doctest/doctest.h>

#include "compiler/diagnostics.h"
#include "compiler/syntax/parser.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;
namespace b = bpfql;

namespace {

const b::Expr& first_stream(const b::CheckedProgram& p) { return *p.queries.at(0).stream.at(0).expr; }

std::string on(const char* probe, const std::string& select) {
  return std::string("probe: ") + probe + "\nselect:\n  - \"" + select + "\"\n";
}
const char* kExecve = "tracepoint:syscalls:sys_enter_execve";

}  // namespace

TEST_CASE("parser: ->, ., [N], casts and ?: build their nodes with C's precedence") {
  auto parse = [](const char* text) {
    auto e = b::parse_expression(text, b::SourceLoc{"q.yml", 1, 1});
    REQUIRE_MESSAGE(e, text);
    return std::move(*e);
  };
  auto m = parse("curtask->se.cfs_rq->nr_queued");
  const auto& outer = std::get<b::Member>(m->node);
  CHECK(outer.arrow);
  CHECK(outer.name == "nr_queued");
  CHECK(std::get<b::Member>(outer.object->node).name == "cfs_rq");
  CHECK_FALSE(std::get<b::Member>(outer.object->node).arrow);

  auto cast = parse("((struct sock *)args.skaddr)->__sk_common");
  const auto& through = std::get<b::Member>(cast->node);
  CHECK(std::get<b::Cast>(through.object->node).type_name == "struct sock *");

  auto narrow = parse("(s32)retval + 1");  // the cast binds tighter than '+'
  CHECK(std::get<b::Binary>(narrow->node).lhs->as<b::Cast>());

  auto cond = parse("a > 1 ? b : c ? d : e");  // right-associative
  const auto& c = std::get<b::Conditional>(cond->node);
  CHECK(c.otherwise->as<b::Conditional>());
  CHECK(c.cond->as<b::Binary>());

  auto ix = parse("args.argv[1]");
  CHECK(std::get<b::Index>(ix->node).object->as<b::FieldRef>());
  CHECK(parse("(pid)")->as<b::Identifier>());  // a name in parentheses is no cast
}

TEST_CASE("parser: what is malformed says so where it is") {
  auto error = [](const char* text) {
    auto e = b::parse_expression(text, b::SourceLoc{"q.yml", 1, 1});
    REQUIRE_FALSE_MESSAGE(e, text);
    return std::to_string(e.error().loc.col) + ": " + e.error().message;
  };
  CHECK(error("args->filename") ==
        "5: 'args->filename' is bpftrace's spelling; in bpfql a tracepoint field is "
        "'args.filename'");
  CHECK(error("pid ? 1") == "8: expected ':' for the '?' at 1:5");
  CHECK(error("args.argv[1") == "12: expected ']' to close '[' at 1:10");
  CHECK(error("(struct sock)x") == "13: a cast to 'struct sock' needs a pointer: '(struct sock *)'");
  CHECK(error("curtask->") == "10: expected a member name after '->'");
}

TEST_CASE("curtask: members through BTF, nested structs, pointers followed, char[] as strings") {
  auto p = check_yaml(on("tracepoint:sched:sched_switch", "curtask->real_parent->tgid"));
  REQUIRE_MESSAGE(p, p.error().message);
  const auto& e = first_stream(*p);
  CHECK(e.type.describe() == "s32");
  CHECK(std::get<b::Member>(e.node).offset == 1268);  // this kernel's task_struct.tgid
  CHECK(std::get<b::Member>(std::get<b::Member>(e.node).object->node).offset == 1280);

  auto queued = check_yaml(on("profile:hz:99", "curtask->se.cfs_rq->nr_queued"));
  REQUIRE_MESSAGE(queued, queued.error().message);
  CHECK(first_stream(*queued).type.describe() == "u32");

  auto comm = check_yaml(on("tracepoint:sched:sched_switch", "curtask->comm"));
  REQUIRE_MESSAGE(comm, comm.error().message);
  CHECK(first_stream(*comm).type.is_string());
  CHECK(first_stream(*comm).type.str_size == 16);
  CHECK(first_stream(*comm).type.source == b::StringSource::KernelPtr);
}

TEST_CASE("BTF errors: the struct's real members, did-you-mean, '->' vs '.', bitfields") {
  CHECK(check_error(on("profile:hz:99", "curtask->se.cfs_rq->nr_running")) ==
        "3:26: struct cfs_rq has no member 'nr_running' in this kernel (its 39 members include: "
        "nr_queued, h_nr_runnable, h_nr_queued, h_nr_idle, zero_vruntime)");
  CHECK(check_error(on(kExecve, "curtask->pidd")) ==
        "3:15: struct task_struct has no member 'pidd' in this kernel; did you mean 'pid'? (its "
        "248 members include: pid, prio, dl, tgid, cred)");
  CHECK(check_error(on(kExecve, "curtask.pid")) ==
        "3:6: 'curtask' is a pointer to struct task_struct: write 'curtask->pid'");
  CHECK(check_error(on(kExecve, "curtask->se->cfs_rq")) ==
        "3:6: 'curtask->se' is a struct sched_entity, not a pointer: write 'curtask->se.cfs_rq'");
  CHECK(check_error(on(kExecve, "curtask->se")) ==
        "3:6: 'curtask->se' is a struct sched_entity, not a value: take one of its members "
        "('.NAME')");
  CHECK(check_error(on(kExecve, "pid->x")) ==
        "3:6: 'pid' is an integer with no type to take '->x' of; if it is an address, cast it: "
        "'((struct NAME *)pid)->x'");
  CHECK(check_error(on("tracepoint:sock:inet_sock_set_state", "args.skaddr->sk_state")) ==
        "3:6: 'args.skaddr' points to void, which has no members; cast it to the struct it points "
        "to: '((struct NAME *)args.skaddr)->sk_state'");
  CHECK(check_error(on(kExecve, "(struct no_such *)arg0")).find("not available") !=
        std::string::npos);
  CHECK(check_error(on("tracepoint:sock:inet_sock_set_state", "(struct no_such *)args.skaddr")) ==
        "3:6: the kernel's BTF has no struct no_such");
  // A bitfield is refused by name (task_struct.sched_migrated is 1 bit in this kernel).
  CHECK(check_error(on(kExecve, "curtask->sched_migrated")) ==
        "3:15: 'sched_migrated' of struct task_struct is a bitfield (1 bit), which bpfql does not "
        "read");
}

TEST_CASE("BTF without BTF: curtask and casts say what is missing") {
  auto& catalog = const_cast<b::FixtureCatalog&>(b::testing::fixture_catalog());
  catalog.set_kernel_types_available(false);
  std::string curtask = check_error(on(kExecve, "curtask->pid"));
  std::string cast = check_error(on("tracepoint:sock:inet_sock_set_state",
                                    "((struct sock *)args.skaddr)->sk_state"));
  catalog.set_kernel_types_available(true);
  CHECK(curtask == "3:6: 'curtask' needs the kernel's BTF (/sys/kernel/btf/vmlinux), which this "
                   "kernel does not provide");
  CHECK(cast.find("needs the kernel's BTF") != std::string::npos);
}

TEST_CASE("user memory: syscall pointer fields typed from the format, argv, join()") {
  auto p = check_yaml(on("tracepoint:syscalls:sys_enter_clock_nanosleep", "args.rqtp->tv_sec"));
  REQUIRE_MESSAGE(p, p.error().message);
  CHECK(first_stream(*p).type.describe() == "s64");
  const auto& m = std::get<b::Member>(first_stream(*p).node);
  CHECK(m.object->type.user_memory);

  auto arg = check_yaml(on(kExecve, "args.argv[1]"));
  REQUIRE_MESSAGE(arg, arg.error().message);
  CHECK(first_stream(*arg).type.source == b::StringSource::UserPtr);
  CHECK(std::get<b::Index>(first_stream(*arg).node).elem_size == 8);

  auto joined = check_yaml(on(kExecve, "join(args.argv)"));
  REQUIRE_MESSAGE(joined, joined.error().message);
  CHECK(first_stream(*joined).type.str_size == 256);  // 4 x strlen, a power of two

  CHECK(check_error(on(kExecve, "str(args.argv)")) ==
        "3:10: 'args.argv' is an array of strings ('char **'), not a string: use join(args.argv) "
        "for all of them, or str(args.argv[N]) for one");
  CHECK(check_error(on(kExecve, "join(args.filename)")) ==
        "3:11: join() needs an array of string pointers (a 'char **', as execve's argv), but "
        "'args.filename' is a string");
  CHECK(check_error(on(kExecve, "join(args.argv, \\\"--\\\")")) ==
        "3:22: the separator of join() must be a one-byte string literal, such as \" \" or \",\"");
}

TEST_CASE("indexing: constant indexes, bounds checked against the array") {
  auto p = check_yaml(on("tracepoint:raw_syscalls:sys_enter", "args.args[5]"));
  REQUIRE_MESSAGE(p, p.error().message);
  CHECK(first_stream(*p).type.describe() == "u64");
  CHECK(check_error(on("tracepoint:raw_syscalls:sys_enter", "args.args[6]")) ==
        "3:16: index 6 is out of bounds: field 'args' is a 'unsigned long[6]' (indexes 0..5)");
  CHECK(check_error(on("tracepoint:raw_syscalls:sys_enter", "args.args[5000]")) ==
        "3:16: the index '5000' is 5000; a constant index is from 0 to 4096");
  CHECK(check_error(on("tracepoint:raw_syscalls:sys_enter", "args.args[0 - 1]")) ==
        "3:16: the index '0 - 1' is -1; a constant index is from 0 to 4096");
  CHECK(check_error(on(kExecve, "curtask->comm[20]")) ==
        "3:6: 'curtask->comm' is a string; bpfql does not index strings");
  auto bytes = check_yaml(on("tracepoint:sock:inet_sock_set_state", "args.daddr[3]"));
  REQUIRE_MESSAGE(bytes, bytes.error().message);
  CHECK(first_stream(*bytes).type.describe() == "u8");
}

TEST_CASE("parser: an index is any expression, up to its ']'") {
  auto e = b::parse_expression("curtask->files->fdt->fd[args.fd + 1]->f_pos",
                               b::SourceLoc{"q.yml", 1, 1});
  REQUIRE(e);
  const auto& pos = std::get<b::Member>((*e)->node);
  const auto& ix = std::get<b::Index>(pos.object->node);
  CHECK(ix.index->text == "args.fd + 1");
  CHECK(ix.index->as<b::Binary>());
  CHECK(std::get<b::Member>(ix.object->node).name == "fd");
}

TEST_CASE("variable indexes: a pointer has no bound, an array its length, checked per event") {
  const char* read = "tracepoint:syscalls:sys_enter_read";
  // struct file **fd: the file behind a descriptor, its name a string through str().
  auto p = check_yaml(on(read, "str(curtask->files->fdt->fd[args.fd]->f_path.dentry->d_name.name)"));
  REQUIRE_MESSAGE(p, p.error().message);
  CHECK(first_stream(*p).type.is_string());
  CHECK(first_stream(*p).type.source == b::StringSource::KernelPtr);

  auto file = check_yaml(on(read, "curtask->files->fdt->fd[args.fd]"));
  REQUIRE_MESSAGE(file, file.error().message);
  const auto& fd = std::get<b::Index>(first_stream(*file).node);
  CHECK(fd.variable);
  CHECK(fd.bound == 0);
  CHECK(fd.elem_size == 8);
  CHECK(first_stream(*file).type.ktype->spelling() == "struct file");

  // struct file *fd_array[64]: a variable index is checked against 64 in the program.
  auto array = check_yaml(on(read, "curtask->files->fd_array[(u32)args.fd]"));
  REQUIRE_MESSAGE(array, array.error().message);
  const auto& in_array = std::get<b::Index>(first_stream(*array).node);
  CHECK(in_array.variable);
  CHECK(in_array.bound == 64);
  CHECK_FALSE(std::get<b::Index>(first_stream(*check_yaml(on(read, "curtask->files->fd_array[63]")))
                                     .node)
                  .variable);
  CHECK(check_error(on(read, "curtask->files->fd_array[64]")) ==
        "3:31: index 64 is out of bounds: 'curtask->files->fd_array' is a struct file *[64] "
        "(indexes 0..63)");

  // retval at an exit; a record array chosen by a variable index.
  auto ret = check_yaml(on("tracepoint:syscalls:sys_exit_accept4", "curtask->files->fdt->fd[retval]"));
  REQUIRE_MESSAGE(ret, ret.error().message);
  auto raw = check_yaml(on("tracepoint:raw_syscalls:sys_enter", "args.args[pid % 6]"));
  REQUIRE_MESSAGE(raw, raw.error().message);
  CHECK(std::get<b::Index>(first_stream(*raw).node).bound == 6);
  CHECK(first_stream(*raw).type.describe() == "u64");
}

TEST_CASE("variable index errors: not an integer, not indexable, not at this probe") {
  const char* read = "tracepoint:syscalls:sys_enter_read";
  CHECK(check_error(on(read, "curtask->files->fdt->fd[comm]")) ==
        "3:30: the index 'comm' is a string; an index is an integer");
  CHECK(check_error(on(read, "curtask->files->fdt->fd[args.fd > 2]")) ==
        "3:30: the index 'args.fd > 2' is a bool; an index is an integer");
  CHECK(check_error(on(read, "curtask->files->fdt->fd[curtask->files]")) ==
        "3:30: the index 'curtask->files' is a pointer (to a struct files_struct); an index is an "
        "integer");
  CHECK(check_error(on(read, "curtask->pid[args.fd]")) ==
        "3:6: 'curtask->pid' is a s32, not an array or a typed pointer");
  CHECK(check_error(on(read, "curtask->files->fdt->fd[retval]")).find("retval") !=
        std::string::npos);
  std::string yaml = on(read, "curtask->files->fdt->fd[comm]");
  auto p = check_yaml(yaml);
  REQUIRE_FALSE(p);
  std::string shown = b::format_diagnostic(p.error(), yaml);
  CHECK(shown.find("\n                               ^") != std::string::npos);
}

TEST_CASE("casts to fixed-width integers and the conditional") {
  auto p = check_yaml(on("tracepoint:syscalls:sys_exit_openat", "(s32)retval"));
  REQUIRE_MESSAGE(p, p.error().message);
  CHECK(first_stream(*p).type.describe() == "s32");
  auto u8 = check_yaml(on("tracepoint:syscalls:sys_exit_openat", "(u8)retval"));
  REQUIRE_MESSAGE(u8, u8.error().message);
  CHECK(first_stream(*u8).type.describe() == "u8");
  auto cond = check_yaml(on("tracepoint:syscalls:sys_exit_openat", "retval < 0 ? 0 - retval : 0"));
  REQUIRE_MESSAGE(cond, cond.error().message);
  CHECK(first_stream(*cond).type.describe() == "s64");
  CHECK(check_error(on(kExecve, "(u32)comm")) == "3:6: cannot cast string 'comm' to u32");
  CHECK(check_error(on(kExecve, "pid > 1 ? comm : 1")) ==
        "3:16: '?:' chooses between numbers, but 'comm' is a string; to print a name for a "
        "number, select the number and let the output name it");
}

TEST_CASE("a BTF error renders with its line and a caret under the member") {
  std::string yaml = on("profile:hz:99", "curtask->se.cfs_rq->nr_running");
  auto p = check_yaml(yaml);
  REQUIRE_FALSE(p);
  std::string shown = b::format_diagnostic(p.error(), yaml);
  CHECK(shown.find("    - \"curtask->se.cfs_rq->nr_running\"\n") != std::string::npos);
  CHECK(shown.find("\n                           ^") != std::string::npos);
}

TEST_CASE("interval:D: a cpu-clock timer on one CPU, every D") {
  auto p = check_yaml("probe: interval:250ms\nselect: count()\n");
  REQUIRE_MESSAGE(p, p.error().message);
  const auto& probe = p->queries[0].probes.at(0);
  CHECK(probe.kind == b::ProbeKind::Profile);
  CHECK(probe.one_cpu);
  CHECK(probe.sample_period == 250'000'000);
  CHECK(probe.spec == "interval:250ms");
  auto bpftrace_style = check_yaml("probe: interval:s:2\nselect: count()\n");
  REQUIRE_MESSAGE(bpftrace_style, bpftrace_style.error().message);
  CHECK(bpftrace_style->queries[0].probes.at(0).sample_period == 2'000'000'000);
  CHECK(check_error("probe: interval:10us\nselect: count()\n") ==
        "1:17: an interval probe fires at most every 1ms, not every 10us");
  CHECK(check_error("probe: interval:soon\nselect: count()\n") ==
        "1:17: 'soon' is not a duration such as 1s or 100ms");
  CHECK(check_error("probe: interval\nselect: count()\n") ==
        "1:8: an interval probe is 'interval:DURATION' (such as 'interval:1s' or "
        "'interval:100ms'), not 'interval'");
}
