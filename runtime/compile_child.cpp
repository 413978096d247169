// libbcc compile in a child process (see compile_child.h).
#include "runtime/compile_child.h"

#include <bcc/BPF.h>
#include <bcc/bpf_module.h>
#include <bcc/libbpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "runtime/bpf_elf.h"
#include "runtime/clang_compile.h"
#include "runtime/kallsyms_shortcut.h"
#include "runtime/loader.h"
#include "runtime/stderr_capture.h"
#include "runtime/verifier_log.h"

namespace bpfql {
namespace {

// ebpf::BPF keeps its BPFModule private, and only ebpf::BPF::init() generates the USDT argument
// readers. The child needs the module after init() for the instructions and the maps; an
// explicit template instantiation may name a private member ([temp.spec.general]/6), which is
// how it is reached without patching libbcc.
using ModuleMember = std::unique_ptr<ebpf::BPFModule> ebpf::BPF::*;
ModuleMember module_member();
template <ModuleMember M>
struct ExposeModule {
  friend ModuleMember module_member() { return M; }
};
template struct ExposeModule<&ebpf::BPF::bpf_module_>;

ebpf::BPFModule& module_of(ebpf::BPF& bpf) { return *(bpf.*module_member()); }

// The first query attaching each function, in Plan order.
std::vector<std::pair<const PlanQuery*, const PlanAttach*>> attached_functions(const Plan& plan) {
  std::vector<std::pair<const PlanQuery*, const PlanAttach*>> out;
  std::set<std::string> seen;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (seen.insert(a.function).second) out.emplace_back(&q, &a);
  return out;
}

// libbcc prints no verifier log when the kernel says E2BIG (the verifier gave up after 1M
// instructions): verify the function again in a module of our own, with a log buffer the
// kernel fills from the end (the tail says where it gave up). Slow (seconds): only for -v.
std::string reverify_with_log(const Plan& plan, const PlanAttach& a) {
  if (!usdt_probes(plan).empty()) return "";  // init() prepends USDT readers we cannot rebuild
  StderrCapture quiet;  // libbcc prints the log too; ours is the one kept
  ebpf::BPFModule module(0);
  std::vector<const char*> flags;
  for (const auto& f : compile_cflags()) flags.push_back(f.c_str());
  if (module.load_string(plan.c_source, flags.data(), static_cast<int>(flags.size())) != 0)
    return "";
  auto* insns = reinterpret_cast<const bpf_insn*>(module.function_start(a.function));
  if (insns == nullptr) return "";
  std::string log(1 << 20, '\0');
  int fd = module.bcc_func_load(static_cast<int>(program_type_of(a)), a.function.c_str(),
                                insns, static_cast<int>(module.function_size(a.function)),
                                module.license(), module.kern_version(), 1, log.data(),
                                static_cast<unsigned>(log.size()));
  if (fd >= 0) close(fd);
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return fmt::format("verifier log for {} (its last {} KiB):\n{}\n", a.function,
                     log.size() / 1024, log);
}

// The raw BTF of a loaded BTF object (the one libbcc loaded for the program).
std::expected<std::string, std::string> btf_bytes(uint32_t btf_id) {
  union bpf_attr attr{};
  attr.btf_id = btf_id;
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_BTF_GET_FD_BY_ID, &attr, sizeof attr));
  if (fd < 0) return std::unexpected(fmt::format("BTF {}: {}", btf_id, std::strerror(errno)));
  bpf_btf_info info{};
  uint32_t len = sizeof info;
  std::string bytes;
  int rc = bpf_obj_get_info(fd, &info, &len);  // first the size
  if (rc == 0) {
    bytes.resize(info.btf_size);
    info = bpf_btf_info{};
    info.btf = reinterpret_cast<uint64_t>(bytes.data());
    info.btf_size = static_cast<uint32_t>(bytes.size());
    len = sizeof info;
    rc = bpf_obj_get_info(fd, &info, &len);
  }
  int err = errno;
  close(fd);
  if (rc != 0) return std::unexpected(fmt::format("BTF {}: {}", btf_id, std::strerror(err)));
  return bytes;
}

// The maps and the attached functions' instructions of a module that init() compiled.
std::expected<ProgramImage, std::string> take_image(ebpf::BPFModule& m, const Plan& plan) {
  ProgramImage image;
  image.license = m.license() ? m.license() : "GPL";
  image.kern_version = m.kern_version();
  std::map<int, int> map_of_fd;
  for (size_t id = 0; id < m.num_tables(); ++id) {
    int fd = m.table_fd(id);
    bpf_map_info info{};
    uint32_t len = sizeof info;
    if (fd < 0 || bpf_obj_get_info(fd, &info, &len) != 0)
      return std::unexpected(fmt::format("cannot inspect map {}", m.table_name(id)));
    map_of_fd[fd] = static_cast<int>(image.maps.size());
    ImageMap map{m.table_name(id), info.type, info.key_size, info.value_size,
                 info.max_entries, info.map_flags, 0, 0};
    if (map_type_needs_btf(info.type)) {
      if (image.btf.empty()) {
        auto btf = btf_bytes(info.btf_id);
        if (!btf) return std::unexpected(fmt::format("map {}: {}", map.name, btf.error()));
        image.btf = std::move(*btf);
      }
      map.btf_key_type_id = info.btf_key_type_id;
      map.btf_value_type_id = info.btf_value_type_id;
    }
    image.maps.push_back(std::move(map));
  }
  for (const auto& [q, a] : attached_functions(plan)) {
    const uint8_t* start = m.function_start(a->function);
    if (start == nullptr) return std::unexpected("no function " + a->function + " in the program");
    ImageFunction f{a->function, program_type_of(*a),
                    std::string(reinterpret_cast<const char*>(start), m.function_size(a->function)),
                    {}, {}};
    auto refs = take_map_references(f.code, [&](int fd) {
      auto it = map_of_fd.find(fd);
      return it == map_of_fd.end() ? -1 : it->second;
    });
    if (!refs) return std::unexpected(a->function + ": " + refs.error());
    f.map_refs = std::move(*refs);
    f.constant_refs = take_constant_references(f.code);
    image.functions.push_back(std::move(f));
  }
  return image;
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
bool get_str(std::string_view& in, std::string& s) {
  uint32_t n;
  if (in.size() < 4) return false;
  std::memcpy(&n, in.data(), 4);
  in.remove_prefix(4);
  if (n > in.size()) return false;
  s.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

constexpr std::string_view kReplyMagic = "BPFQLOUT";
constexpr std::string_view kChildKey = "compile-child";

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string child_death(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the compiler process was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("the compiler process exited with status {} without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace

const std::vector<std::string>& compile_cflags() {
  static const std::vector<std::string> flags = {
      "-D_LINUX_LOG2_H",   // <linux/log2.h>
      "-D_ASM_X86_PAGE_H", // <asm/page.h> on x86
      "-D__ASM_PAGE_H",    // <asm/page.h> on arm64
  };
  return flags;
}

uint32_t program_type_of(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::Tracepoint:
      return BPF_PROG_TYPE_TRACEPOINT;
    case ProbeKind::Profile:
    case ProbeKind::Software:
    case ProbeKind::Hardware:
      return BPF_PROG_TYPE_PERF_EVENT;
    default:
      return BPF_PROG_TYPE_KPROBE;  // kprobes, uprobes and USDT
  }
}

uint32_t program_type_of(const PlanAttach& a) {
  if (a.kind == ProbeKind::Tracepoint && a.raw_tracepoint_ok &&
      !a.tracepoint.starts_with("syscalls:"))
    return BPF_PROG_TYPE_RAW_TRACEPOINT;
  return program_type_of(a.kind);
}

std::string compile_failure_message(const std::string& log) {
  std::string errors = log.empty() ? "(libbcc printed nothing)" : log;
  return fmt::format(
      "failed to compile the generated BPF program (a bpfql bug; `bpfql compile` prints the "
      "C):\n{}",
      errors);
}

std::string verifier_failure_message(const PlanQuery& q, const std::string& function,
                                     const std::string& reason, const std::string& log) {
  std::string summary = verifier_summary(log);
  if (summary.empty()) summary = reason;
  return fmt::format(
      "the kernel's verifier rejected the program for query {}: {}; run with -v for the whole log",
      q.name, summary.empty() ? function : summary);
}

namespace {

CompileOutcome compile_with(ebpf::BPF& bpf, const Plan& plan, bool full_verifier_log) {
  CompileOutcome r;
  StderrCapture capture;
  KallsymsShortcut no_kallsyms_scan;
  ebpf::StatusTuple st = bpf.init(plan.c_source, compile_cflags(), usdt_probes(plan));
  if (!st.ok()) {
    r.log = without_libbcc_noise(capture.finish());
    if (st.msg().find("USDT") != std::string::npos || r.log.find("USDT") != std::string::npos)
      r.error = fmt::format("cannot set up the USDT probes: {}", st.msg());
    else
      r.error = compile_failure_message(r.log);
    return r;
  }
  // The verifier runs here first, through libbcc, so that a rejection comes with libbcc's log
  // (which has the C lines: BTF line info the session's own load does not carry).
  for (const auto& [q, a] : attached_functions(plan)) {
    int fd = -1;
    st = bpf.load_func(a->function, static_cast<bpf_prog_type>(program_type_of(*a)), fd);
    if (!st.ok()) {
      r.log = without_libbcc_noise(capture.finish());
      r.error = verifier_failure_message(*q, a->function, st.msg(), r.log);
      if (full_verifier_log && is_too_complex(r.log)) r.log += reverify_with_log(plan, *a);
      return r;
    }
  }
  auto image = take_image(module_of(bpf), plan);
  r.log = without_libbcc_noise(capture.finish());
  if (!image) {
    r.error = "internal error: cannot take the compiled program: " + image.error();
    return r;
  }
  r.image = std::move(*image);
  return r;
}

// LINUX_VERSION_CODE of the running kernel, from its release ("6.1.0-13-amd64").
uint32_t running_kernel_version() {
  utsname u{};
  if (uname(&u) != 0) return 0;
  unsigned a = 0, b = 0, c = 0;
  if (std::sscanf(u.release, "%u.%u.%u", &a, &b, &c) < 2) return 0;
  return (a << 16) + (b << 8) + std::min(c, 255u);
}

// The plain C in one clang pass, read back into an image; on failure, why (for the log).
std::expected<ProgramImage, std::string> compile_plain(const Plan& plan) {
  StderrCapture capture;  // clang's error count, LLVM's messages: for the log, not the terminal
  auto object = compile_plain_c(plan.c_plain);
  std::string printed = capture.finish();
  if (!object) return std::unexpected("clang: " + object.error() + printed);
  std::vector<ElfFunction> functions;
  for (const auto& [q, a] : attached_functions(plan))
    functions.push_back({a->function, program_type_of(*a)});
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return std::unexpected("cannot count the possible CPUs");
  auto image = image_from_elf(*object, functions, static_cast<uint32_t>(cpus));
  if (image) image->kern_version = running_kernel_version();  // kprobes on kernels before 5.0
  return image;
}

// Why a Plan goes to libbcc (compiler_for), for -v.
const char* why_libbcc(const Plan& plan) {
  if (plan.c_plain.empty()) return "the program uses USDT probes, or pt_regs off x86-64";
  if (compiler_for(plan) == Compiler::Libbcc) return "BPFQL_COMPILER=libbcc";
  return "after the one-pass compile";
}

// The compile the child (or this process, as the fallback) does.
CompileOutcome compile_with_compiler(const Plan& plan, bool full_verifier_log, Compiler compiler,
                                     bool leak_libbcc) {
  std::string note;
  if (compiler == Compiler::Plain) {
    auto image = compile_plain(plan);
    if (image) {
      CompileOutcome r;
      r.image = std::move(*image);
      r.plain = true;
      r.log = "compiled the plain C in one clang pass (libbcc not run)\n";
      return r;
    }
    note = "the plain C did not compile (" + image.error() + "); compiling with libbcc\n";
  } else {
    note = "compiling with libbcc (" + std::string(why_libbcc(plan)) + ")\n";
  }
  // No "rw engine": libbcc would JIT a text reader and writer for every map's key and value,
  // for its table API's string conversions, which bpfql never uses.
  auto bpf = std::make_unique<ebpf::BPF>(0, nullptr, /*rw_engine_enabled=*/false);
  CompileOutcome r = compile_with(*bpf, plan, full_verifier_log);
  // In the child, never destroyed: tearing libbcc's module down would only delay the reply.
  if (leak_libbcc) (void)bpf.release();
  r.log = note + r.log;
  return r;
}

}  // namespace

Compiler compiler_for(const Plan& plan) {
  if (plan.c_plain.empty()) return Compiler::Libbcc;
  const char* choice = std::getenv("BPFQL_COMPILER");
  return choice && std::string_view(choice) == "libbcc" ? Compiler::Libbcc : Compiler::Plain;
}

CompileOutcome compile_here(const Plan& plan, bool full_verifier_log, Compiler compiler) {
  return compile_with_compiler(plan, full_verifier_log, compiler, /*leak_libbcc=*/false);
}

std::string encode_outcome(const CompileOutcome& outcome) {
  std::string out(kReplyMagic);
  out.push_back(outcome.image ? 1 : 0);
  out.push_back(outcome.plain ? 1 : 0);
  put_str(out, outcome.error);
  put_str(out, outcome.log);
  put_str(out, outcome.image ? encode_image(*outcome.image, kChildKey) : std::string());
  return out;
}

std::optional<CompileOutcome> decode_outcome(std::string_view in) {
  if (in.size() < kReplyMagic.size() + 1 || in.substr(0, kReplyMagic.size()) != kReplyMagic)
    return std::nullopt;
  in.remove_prefix(kReplyMagic.size());
  bool ok = in.front() == 1;
  in.remove_prefix(1);
  CompileOutcome r;
  if (in.empty()) return std::nullopt;
  r.plain = in.front() == 1;
  in.remove_prefix(1);
  std::string image;
  if (!get_str(in, r.error) || !get_str(in, r.log) || !get_str(in, image) || !in.empty())
    return std::nullopt;
  if (ok) {
    auto decoded = decode_image(image, kChildKey);
    if (!decoded) return std::nullopt;
    r.image = std::move(*decoded);
  }
  return r;
}

CompileOutcome compile_in_child(const Plan& plan, bool full_verifier_log, Compiler compiler) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return compile_here(plan, full_verifier_log, compiler);
  pid_t child = fork();
  if (child < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return compile_here(plan, full_verifier_log, compiler);
  }
  if (child == 0) {
    close(pipe_fds[0]);
    CompileOutcome outcome =
        compile_with_compiler(plan, full_verifier_log, compiler, /*leak_libbcc=*/true);
    bool sent = write_all(pipe_fds[1], encode_outcome(outcome));
    close(pipe_fds[1]);  // the parent goes on now, not after this process's teardown
    // _exit: no atexit handlers, no flushing of stdio buffers copied from the parent.
    _exit(sent ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string reply = read_all(pipe_fds[0]);
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (auto outcome = decode_outcome(reply)) return std::move(*outcome);
  if (compiler == Compiler::Plain) {  // LLVM exits the process on some errors: libbcc's turn
    CompileOutcome r = compile_in_child(plan, full_verifier_log, Compiler::Libbcc);
    r.log = "the one-pass compile failed: " + child_death(status) + "; compiling with libbcc\n" +
            r.log;
    return r;
  }
  CompileOutcome r;
  r.error = "failed to compile the generated BPF program: " + child_death(status);
  return r;
}

}  // namespace bpfql
