#include "runtime/compile/compile_libbcc.h"

#include <bcc/BPF.h>
#include <bcc/bpf_module.h>
#include <bcc/libbpf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <expected>
#include <map>
#include <memory>

#include "runtime/compile/kallsyms_shortcut.h"
#include "runtime/compile/stderr_capture.h"
#include "runtime/compile/verifier_log.h"

namespace bpfql {
namespace {

// ebpf::BPF keeps its BPFModule private, and only ebpf::BPF::init() generates the USDT argument
// readers. The compile needs the module after init() for the instructions and the maps; an
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

std::vector<ebpf::USDT> usdt_probes(const CompileRequest& request) {
  std::vector<ebpf::USDT> out;
  for (const auto& u : request.usdt) {
    if (u.pid >= 0)
      out.emplace_back(u.binary, u.pid, u.provider, u.name, u.function);
    else
      out.emplace_back(u.binary, u.provider, u.name, u.function);
  }
  return out;
}

// libbcc prints no verifier log when the kernel says E2BIG (the verifier gave up after 1M
// instructions): verify the function again in a module of our own, with a log buffer the
// kernel fills from the end (the tail says where it gave up). Slow (seconds): only for -v.
std::string reverify_with_log(const CompileRequest& request, const CompileFunction& f) {
  if (!request.usdt.empty()) return "";  // init() prepends USDT readers we cannot rebuild
  StderrCapture quiet;  // libbcc prints the log too; ours is the one kept
  ebpf::BPFModule module(0);
  std::vector<const char*> flags;
  for (const auto& flag : compile_cflags()) flags.push_back(flag.c_str());
  if (module.load_string(request.c_source, flags.data(), static_cast<int>(flags.size())) != 0)
    return "";
  auto* insns = reinterpret_cast<const bpf_insn*>(module.function_start(f.name));
  if (insns == nullptr) return "";
  std::string log(1 << 20, '\0');
  int fd = module.bcc_func_load(static_cast<int>(f.prog_type), f.name.c_str(), insns,
                                static_cast<int>(module.function_size(f.name)), module.license(),
                                module.kern_version(), 1, log.data(),
                                static_cast<unsigned>(log.size()));
  if (fd >= 0) close(fd);
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return fmt::format("verifier log for {} (its last {} KiB):\n{}\n", f.name, log.size() / 1024,
                     log);
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
std::expected<ProgramImage, std::string> take_image(ebpf::BPFModule& m,
                                                    const CompileRequest& request) {
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
  for (const auto& f : request.functions) {
    const uint8_t* start = m.function_start(f.name);
    if (start == nullptr) return std::unexpected("no function " + f.name + " in the program");
    ImageFunction fn{f.name, f.prog_type,
                     std::string(reinterpret_cast<const char*>(start), m.function_size(f.name)),
                     {}, {}};
    auto refs = take_map_references(fn.code, [&](int fd) {
      auto it = map_of_fd.find(fd);
      return it == map_of_fd.end() ? -1 : it->second;
    });
    if (!refs) return std::unexpected(f.name + ": " + refs.error());
    fn.map_refs = std::move(*refs);
    fn.constant_refs = take_constant_references(fn.code);
    image.functions.push_back(std::move(fn));
  }
  return image;
}

CompileOutcome compile_with(ebpf::BPF& bpf, const CompileRequest& request) {
  CompileOutcome r;
  StderrCapture capture;
  KallsymsShortcut no_kallsyms_scan;
  ebpf::StatusTuple st = bpf.init(request.c_source, compile_cflags(), usdt_probes(request));
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
  for (const auto& f : request.functions) {
    int fd = -1;
    st = bpf.load_func(f.name, static_cast<bpf_prog_type>(f.prog_type), fd);
    if (!st.ok()) {
      r.log = without_libbcc_noise(capture.finish());
      r.error = verifier_failure_message(f.query, f.name, st.msg(), r.log);
      if (request.full_verifier_log && is_too_complex(r.log)) r.log += reverify_with_log(request, f);
      return r;
    }
  }
  auto image = take_image(module_of(bpf), request);
  r.log = without_libbcc_noise(capture.finish());
  if (!image) {
    r.error = "internal error: cannot take the compiled program: " + image.error();
    return r;
  }
  r.image = std::move(*image);
  return r;
}

}  // namespace

CompileOutcome compile_libbcc(const CompileRequest& request, bool exiting) {
  // No "rw engine": libbcc would JIT a text reader and writer for every map's key and value,
  // for its table API's string conversions, which bpfql never uses.
  auto bpf = std::make_unique<ebpf::BPF>(0, nullptr, /*rw_engine_enabled=*/false);
  CompileOutcome r = compile_with(*bpf, request);
  // In the helper, never destroyed: tearing libbcc's module down would only delay the reply.
  if (exiting) (void)bpf.release();
  return r;
}

}  // namespace bpfql
