// A KernelCatalog for unit tests: tracepoint formats from
// tests/fixtures/tracepoints/CAT/NAME/format (real files copied from tracefs), probe availability
// and user binaries set by the test.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/check/catalog.h"
#include "runtime/kernel/tracepoint_directory.h"

#ifndef BPFQL_FIXTURE_DIR
#error "BPFQL_FIXTURE_DIR must name tests/fixtures (tests/CMakeLists.txt defines it)"
#endif

namespace bpfql {

// A user binary as the catalog reports it.
struct FakeBinary {
  std::string path;                  // what resolve_binary() returns
  std::vector<std::string> aliases;  // other targets that resolve to it: "c", "libc", a symlink
  std::vector<std::string> symbols;  // the functions has_symbol() finds
  std::vector<UsdtProbeInfo> usdt;   // what usdt_probes() lists
};

class FixtureCatalog : public KernelCatalog {
 public:
  // Starts with kprobes and hardware events available, and with libc and python3.11 as they are
  // on Debian 12 x86_64 (see default_binaries()).
  explicit FixtureCatalog(std::string tracepoint_dir = BPFQL_FIXTURE_DIR "/tracepoints");

  // "" = available; anything else is the reason the catalog gives.
  void set_kprobes_unavailable(std::string reason) { kprobes_unavailable_ = std::move(reason); }
  void set_hardware_events_unavailable(std::string reason) {
    hardware_unavailable_ = std::move(reason);
  }

  // Adds a binary, replacing any with the same path.
  void add_binary(FakeBinary binary);
  void clear_binaries() { binaries_.clear(); }
  // libc (/usr/lib/x86_64-linux-gnu/libc.so.6, aliases "c", "libc", "/lib/x86_64-linux-gnu/
  // libc.so.6") and python (/usr/bin/python3.11, aliases "python3", "python3.11",
  // "/usr/bin/python3") with symbols and USDT probes read off the real files.
  static std::vector<FakeBinary> default_binaries();

  // Like tracepoint(), but says why a fixture is missing or malformed.
  Result<TracepointFormat> load_tracepoint(std::string_view category, std::string_view name) const;

  std::optional<TracepointFormat> tracepoint(std::string_view category,
                                             std::string_view name) const override;
  std::vector<std::string> tracepoint_names() const override;
  std::string kprobes_unavailable() const override { return kprobes_unavailable_; }
  std::string hardware_events_unavailable() const override { return hardware_unavailable_; }
  std::optional<std::string> resolve_binary(std::string_view target) const override;
  bool has_symbol(const std::string& binary_path, std::string_view symbol) const override;
  std::vector<UsdtProbeInfo> usdt_probes(const std::string& binary_path) const override;
  std::vector<std::string> function_symbols(const std::string& binary_path) const override;

  // Starts with task_struct.tgid = 1268, real_parent = 1280, comm = 1936 and thread_info = 0,
  // thread_info.status = 16, and pt_regs' syscall registers (di 112, si 104, dx 96, r10 56,
  // r8 72, r9 64, orig_ax 120) (the BTF of the fixtures' kernel, 6.18.44); nullopt removes a
  // member.
  void set_kernel_member_offset(std::string struct_name, std::string member,
                                std::optional<int> offset);
  std::optional<int> kernel_member_offset(std::string_view struct_name,
                                          std::string_view member) const override;

  // Kernel structs from tests/fixtures/btf/structs.txt (extracted from the fixtures' kernel);
  // set_kernel_types_available(false) makes the catalog a kernel without BTF.
  std::optional<KernelStruct> kernel_struct(std::string_view name) const override;
  bool has_kernel_btf() const override { return btf_available_; }
  void set_kernel_types_available(bool available) { btf_available_ = available; }

 private:
  const FakeBinary* binary_at(std::string_view path) const;

  TracepointDirectory tracepoints_;
  std::string kprobes_unavailable_;
  std::string hardware_unavailable_;
  std::vector<FakeBinary> binaries_;
  std::map<std::pair<std::string, std::string>, int> member_offsets_;
  bool btf_available_ = true;
};

}  // namespace bpfql
