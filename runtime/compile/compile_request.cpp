// Compile requests and outcomes, and their bytes on the helpers' pipes (see compile_request.h).
#include "runtime/compile/compile_request.h"

#include <fmt/format.h>
#include <linux/bpf.h>

#include <cstring>
#include <set>

#include "runtime/compile/verifier_log.h"

namespace bpfql {
namespace {

constexpr std::string_view kRequestMagic = "BPFQLREQ";
constexpr std::string_view kReplyMagic = "BPFQLOUT";
constexpr std::string_view kImageKey = "compile-helper";

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads from the front of the bytes; every get fails (and stays failed) past their end.
struct Reader {
  std::string_view in;
  bool ok = true;

  uint32_t u32() {
    uint32_t v = 0;
    if (!ok || in.size() < 4) return ok = false, 0;
    std::memcpy(&v, in.data(), 4);
    in.remove_prefix(4);
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (!ok || n > in.size()) return ok = false, std::string();
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  bool magic(std::string_view m) {
    if (!in.starts_with(m)) return ok = false;
    in.remove_prefix(m.size());
    return true;
  }
  bool done() const { return ok && in.empty(); }
};

}  // namespace

CompileRequest compile_request(const Plan& plan, bool full_verifier_log) {
  CompileRequest r;
  r.c_plain = plan.c_plain;
  r.c_source = plan.c_source;
  r.full_verifier_log = full_verifier_log;
  std::set<std::string> seen;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches) {
      if (seen.insert(a.function).second)
        r.functions.push_back({a.function, program_type_of(a), q.name});
      if (a.kind == ProbeKind::Usdt)
        r.usdt.push_back({a.binary, a.pid, a.provider, a.usdt_name, a.function});
    }
  return r;
}

std::string encode_request(const CompileRequest& request) {
  std::string out(kRequestMagic);
  put_str(out, request.c_plain);
  put_str(out, request.c_source);
  put_u32(out, static_cast<uint32_t>(request.functions.size()));
  for (const auto& f : request.functions) {
    put_str(out, f.name);
    put_u32(out, f.prog_type);
    put_str(out, f.query);
  }
  put_u32(out, static_cast<uint32_t>(request.usdt.size()));
  for (const auto& u : request.usdt) {
    put_str(out, u.binary);
    put_u32(out, static_cast<uint32_t>(u.pid));
    put_str(out, u.provider);
    put_str(out, u.name);
    put_str(out, u.function);
  }
  put_u32(out, request.full_verifier_log ? 1 : 0);
  return out;
}

std::optional<CompileRequest> decode_request(std::string_view bytes) {
  Reader in{bytes};
  CompileRequest r;
  in.magic(kRequestMagic);
  r.c_plain = in.str();
  r.c_source = in.str();
  for (uint32_t n = in.u32(); in.ok && n > 0; --n) {
    CompileFunction f;
    f.name = in.str();
    f.prog_type = in.u32();
    f.query = in.str();
    r.functions.push_back(std::move(f));
  }
  for (uint32_t n = in.u32(); in.ok && n > 0; --n) {
    CompileUsdt u;
    u.binary = in.str();
    u.pid = static_cast<int>(in.u32());
    u.provider = in.str();
    u.name = in.str();
    u.function = in.str();
    r.usdt.push_back(std::move(u));
  }
  r.full_verifier_log = in.u32() == 1;
  if (!in.done()) return std::nullopt;
  return r;
}

std::string encode_outcome(const CompileOutcome& outcome) {
  std::string out(kReplyMagic);
  put_u32(out, outcome.image ? 1 : 0);
  put_u32(out, outcome.plain ? 1 : 0);
  put_str(out, outcome.error);
  put_str(out, outcome.log);
  put_str(out, outcome.image ? encode_image(*outcome.image, kImageKey) : std::string());
  return out;
}

std::optional<CompileOutcome> decode_outcome(std::string_view bytes) {
  Reader in{bytes};
  CompileOutcome r;
  in.magic(kReplyMagic);
  bool has_image = in.u32() == 1;
  r.plain = in.u32() == 1;
  r.error = in.str();
  r.log = in.str();
  std::string image = in.str();
  if (!in.done()) return std::nullopt;
  if (has_image) {
    auto decoded = decode_image(image, kImageKey);
    if (!decoded) return std::nullopt;
    r.image = std::move(*decoded);
  }
  return r;
}

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

std::string verifier_failure_message(const std::string& query, const std::string& function,
                                     const std::string& reason, const std::string& log) {
  std::string summary = verifier_summary(log);
  if (summary.empty()) summary = reason;
  return fmt::format(
      "the kernel's verifier rejected the program for query {}: {}; run with -v for the whole log",
      query, summary.empty() ? function : summary);
}

}  // namespace bpfql
