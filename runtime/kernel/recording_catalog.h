// A KernelCatalog that answers from another one and notes what the checker asked: the
// tracepoints it read and the kernel structs it looked into. `bpfql kernel export --for QUERIES`
// checks the queries through it, then writes only what they needed.
//
// A new KernelCatalog question about kernel types must be forwarded here too, and note its struct.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "compiler/check/catalog.h"

namespace bpfql {

class RecordingCatalog : public KernelCatalog {
 public:
  explicit RecordingCatalog(const KernelCatalog& inner) : inner_(inner) {}

  std::set<std::string> tracepoints_used() const;  // "category:name"
  std::set<std::string> structs_used() const;

  std::optional<TracepointFormat> tracepoint(std::string_view category,
                                             std::string_view name) const override {
    auto format = inner_.tracepoint(category, name);
    if (format) note(tracepoints_, std::string(category) + ":" + std::string(name));
    return format;
  }
  std::vector<std::string> tracepoint_names() const override { return inner_.tracepoint_names(); }
  std::string kprobes_unavailable() const override { return inner_.kprobes_unavailable(); }
  std::string hardware_events_unavailable() const override {
    return inner_.hardware_events_unavailable();
  }
  std::optional<std::string> resolve_binary(std::string_view target) const override {
    return inner_.resolve_binary(target);
  }
  bool has_symbol(const std::string& binary_path, std::string_view symbol) const override {
    return inner_.has_symbol(binary_path, symbol);
  }
  std::vector<UsdtProbeInfo> usdt_probes(const std::string& binary_path) const override {
    return inner_.usdt_probes(binary_path);
  }
  std::vector<std::string> function_symbols(const std::string& binary_path) const override {
    return inner_.function_symbols(binary_path);
  }
  std::optional<int> kernel_member_offset(std::string_view struct_name,
                                          std::string_view member) const override {
    note(structs_, std::string(struct_name));
    return inner_.kernel_member_offset(struct_name, member);
  }
  std::optional<KernelStruct> kernel_struct(std::string_view name) const override {
    note(structs_, std::string(name));
    return inner_.kernel_struct(name);
  }
  std::string kernel_release() const override { return inner_.kernel_release(); }
  bool has_kernel_btf() const override { return inner_.has_kernel_btf(); }

 private:
  void note(std::set<std::string>& set, std::string name) const {
    std::lock_guard lock(mutex_);
    set.insert(std::move(name));
  }

  const KernelCatalog& inner_;
  mutable std::mutex mutex_;
  mutable std::set<std::string> tracepoints_;
  mutable std::set<std::string> structs_;
};

inline std::set<std::string> RecordingCatalog::tracepoints_used() const {
  std::lock_guard lock(mutex_);
  return tracepoints_;
}

inline std::set<std::string> RecordingCatalog::structs_used() const {
  std::lock_guard lock(mutex_);
  return structs_;
}

}  // namespace bpfql
