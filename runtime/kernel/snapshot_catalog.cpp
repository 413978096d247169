#include "runtime/kernel/snapshot_catalog.h"

#include <bpf/btf.h>

#include <fmt/format.h>

#include "runtime/kernel/elf_catalog.h"
#include "runtime/kernel/btf_structs.h"
#include "runtime/kernel/kernel_btf.h"

namespace bpfql {

Result<std::unique_ptr<SnapshotCatalog>> SnapshotCatalog::open(const std::string& path) {
  auto snapshot = read_snapshot(path);
  if (!snapshot) return std::unexpected(snapshot.error());
  return from(std::move(*snapshot), path);
}

Result<std::unique_ptr<SnapshotCatalog>> SnapshotCatalog::from(KernelSnapshot snapshot,
                                                               const std::string& path) {
  std::unique_ptr<SnapshotCatalog> catalog(new SnapshotCatalog());
  catalog->snapshot_ = std::move(snapshot);
  catalog->path_ = path;
  const std::string& raw = catalog->snapshot_.btf;
  if (!raw.empty()) {
    catalog->btf_ = btf__new(raw.data(), static_cast<__u32>(raw.size()));
    if (!catalog->btf_)
      return error_at({path, 0, 0}, fmt::format("the BTF in kernel snapshot '{}' does not parse "
                                                "({}); export it again",
                                                path, std::strerror(errno)));
  }
  return catalog;
}

SnapshotCatalog::~SnapshotCatalog() { btf__free(btf_); }

std::optional<TracepointFormat> SnapshotCatalog::tracepoint(std::string_view category,
                                                            std::string_view name) const {
  std::string full = fmt::format("{}:{}", category, name);
  std::lock_guard lock(mutex_);
  if (auto cached = parsed_.find(full); cached != parsed_.end()) return cached->second;
  std::optional<TracepointFormat> format;
  if (auto text = snapshot_.tracepoint_formats.find(full);
      text != snapshot_.tracepoint_formats.end())
    if (auto parsed = parse_tracepoint_format(category, name, text->second)) format = *parsed;
  parsed_.emplace(full, format);
  return format;
}

std::vector<std::string> SnapshotCatalog::tracepoint_names() const {
  std::vector<std::string> names;
  names.reserve(snapshot_.tracepoint_formats.size());
  for (const auto& [name, text] : snapshot_.tracepoint_formats) names.push_back(name);
  return names;  // a std::map's keys: sorted
}

std::optional<std::string> SnapshotCatalog::resolve_binary(std::string_view target) const {
  auto path = find_elf_binary(target);
  if (!path) return std::nullopt;
  return *path;
}

bool SnapshotCatalog::has_symbol(const std::string& binary_path, std::string_view symbol) const {
  return elf_has_function(binary_path, symbol);
}

std::vector<UsdtProbeInfo> SnapshotCatalog::usdt_probes(const std::string& binary_path) const {
  return elf_usdt_probes(binary_path);
}

std::vector<std::string> SnapshotCatalog::function_symbols(const std::string& binary_path) const {
  return elf_function_symbols(binary_path);
}

std::optional<KernelStruct> SnapshotCatalog::kernel_struct(std::string_view name) const {
  return btf_kernel_struct(btf_, name);
}

std::optional<int> SnapshotCatalog::kernel_member_offset(std::string_view struct_name,
                                                         std::string_view member) const {
  return bpfql::kernel_member_offset(btf_, struct_name, member);
}

}  // namespace bpfql
