// The KernelCatalog of a kernel snapshot (runtime/kernel/kernel_snapshot.h): tracepoint formats,
// probe availability, release and BTF of the kernel it was exported on, read from the file; no
// root, tracefs or BPF needed. The checker cannot tell it from the live catalog.
//
// User binaries (uprobe and USDT targets) are not part of a kernel: they are looked up on the
// machine running the check, as the live catalog does.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "compiler/check/catalog.h"
#include "runtime/kernel/kernel_snapshot.h"

struct btf;

namespace bpfql {

class SnapshotCatalog : public KernelCatalog {
 public:
  // Reads and decodes FILE; its BTF must parse.
  static Result<std::unique_ptr<SnapshotCatalog>> open(const std::string& path);
  static Result<std::unique_ptr<SnapshotCatalog>> from(KernelSnapshot snapshot,
                                                       const std::string& path);
  ~SnapshotCatalog() override;

  const KernelSnapshot& snapshot() const { return snapshot_; }
  const std::string& path() const { return path_; }
  // The snapshot's BTF (nullptr when the kernel had none), for BTF questions beyond
  // kernel_member_offset (runtime/kernel_btf.h takes a `const btf*`).
  const btf* kernel_btf() const { return btf_; }

  std::optional<TracepointFormat> tracepoint(std::string_view category,
                                             std::string_view name) const override;
  std::vector<std::string> tracepoint_names() const override;
  std::string kprobes_unavailable() const override { return snapshot_.kprobes_unavailable; }
  std::string hardware_events_unavailable() const override {
    return snapshot_.hardware_events_unavailable;
  }
  std::optional<std::string> resolve_binary(std::string_view target) const override;
  bool has_symbol(const std::string& binary_path, std::string_view symbol) const override;
  std::vector<UsdtProbeInfo> usdt_probes(const std::string& binary_path) const override;
  std::vector<std::string> function_symbols(const std::string& binary_path) const override;
  std::optional<int> kernel_member_offset(std::string_view struct_name,
                                          std::string_view member) const override;
  std::string kernel_release() const override { return snapshot_.release; }
  bool has_kernel_btf() const override { return btf_ != nullptr; }
  std::optional<KernelStruct> kernel_struct(std::string_view name) const override;

 private:
  SnapshotCatalog() = default;

  KernelSnapshot snapshot_;
  std::string path_;
  btf* btf_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::optional<TracepointFormat>, std::less<>> parsed_;
};

}  // namespace bpfql
