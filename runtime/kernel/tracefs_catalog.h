// The KernelCatalog of the running machine: tracepoint formats from tracefs, kprobe and PMU
// availability from tracefs, sysfs and perf_event_open, binaries, symbols and USDT notes from ELF
// files (through libbcc), kernel struct offsets from BTF. What is read is cached for the life of
// the object.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/check/catalog.h"
#include "runtime/kernel/tracepoint_directory.h"

namespace bpfql {

class TracefsCatalog : public KernelCatalog {
 public:
  // Uses /sys/kernel/tracing, else /sys/kernel/debug/tracing: the first with an events/ folder.
  TracefsCatalog();
  // Uses the tracefs mounted at `tracefs_root` only.
  explicit TracefsCatalog(std::filesystem::path tracefs_root);

  // "" when tracepoint formats can be read; otherwise what is wrong and how to fix it:
  // "tracefs is not mounted ...: run `mount -t tracefs none /sys/kernel/tracing` (or
  // scripts/setup-host.sh)" or "permission denied reading ...: run as root".
  const std::string& tracefs_problem() const { return problem_; }
  // The tracefs in use, e.g. "/sys/kernel/tracing" ("" when none was usable).
  std::string tracefs_root() const { return root_.string(); }

  // Like tracepoint(), but says why there is none (no such tracepoint, tracefs unusable,
  // unreadable or malformed format file).
  Result<TracepointFormat> load_tracepoint(std::string_view category, std::string_view name) const;
  // Like resolve_binary(), but says why a target does not resolve.
  Result<std::string> find_binary(std::string_view target) const;

  std::optional<TracepointFormat> tracepoint(std::string_view category,
                                             std::string_view name) const override;
  std::vector<std::string> tracepoint_names() const override;
  std::string kprobes_unavailable() const override;
  std::string hardware_events_unavailable() const override;
  std::optional<std::string> resolve_binary(std::string_view target) const override;
  bool has_symbol(const std::string& binary_path, std::string_view symbol) const override;
  std::vector<UsdtProbeInfo> usdt_probes(const std::string& binary_path) const override;
  std::vector<std::string> function_symbols(const std::string& binary_path) const override;
  // From the running kernel's BTF (runtime/kernel/kernel_btf.h).
  std::optional<int> kernel_member_offset(std::string_view struct_name,
                                          std::string_view member) const override;

 private:
  void use_first_usable(const std::vector<std::filesystem::path>& candidates);

  std::filesystem::path root_;  // empty when no candidate was usable
  std::string problem_;
  std::optional<TracepointDirectory> events_;

  mutable std::mutex mutex_;  // guards the caches below
  mutable std::optional<std::string> hardware_problem_;
  mutable std::map<std::string, Result<std::string>, std::less<>> binaries_;
  mutable std::map<std::pair<std::string, std::string>, bool> symbols_;
  mutable std::map<std::string, std::vector<UsdtProbeInfo>> usdt_;
};

}  // namespace bpfql
