// Stack symbolization through the query's stack map and display.h's symbolizers.
#include "runtime/collect/stacks.h"

#include <bcc/libbpf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <vector>

#include "runtime/collect/display.h"

namespace bpfql {

StackSymbolizers::~StackSymbolizers() {
  for (auto& [name, m] : tables_)
    if (m.fd >= 0) close(m.fd);
}

StackSymbolizer StackSymbolizers::for_query(const PlanQuery& query) {
  if (query.stack_map.empty()) return {};
  std::string map = query.stack_map;
  if (!tables_.count(map)) {
    StackMap m;
    int fd = bpf_.map_fd(map);
    m.fd = fd >= 0 ? dup(fd) : -1;
    bpf_map_info info{};
    uint32_t len = sizeof info;
    if (m.fd >= 0 && bpf_obj_get_info(m.fd, &info, &len) == 0) m.value_size = info.value_size;
    tables_[map] = m;
  }
  if (query.cumulative || query.keep_stacks)
    return [this, map](ValueKind kind, int32_t id, int pid) {
      auto key = std::make_tuple(map, kind, id, pid);
      if (auto it = kept_.find(key); it != kept_.end()) return it->second;
      StackValue value = symbolize(map, kind, id, pid);
      if (id >= 0) kept_.emplace(std::move(key), value);  // a negative id is an error, not a stack
      return value;
    };
  return [this, map](ValueKind kind, int32_t id, int pid) { return symbolize(map, kind, id, pid); };
}

// A negative id is the error bpf_get_stackid() returned (no user stack in a kernel thread, or
// the stack map was full): such a stack prints as no frames.
StackValue StackSymbolizers::symbolize(const std::string& map, ValueKind kind, int32_t id,
                                       int pid) {
  StackValue out;
  const StackMap& m = tables_.at(map);
  if (id < 0 || m.fd < 0 || m.value_size < 8) return out;
  std::vector<uint64_t> addrs(m.value_size / 8);
  uint32_t key = static_cast<uint32_t>(id);
  if (bpf_lookup_elem(m.fd, &key, addrs.data()) != 0) return out;
  return symbolize_frames(kind, addrs, pid);  // stops at the first 0
}

StackValue symbolize_frames(ValueKind kind, std::span<const uint64_t> addresses, int pid) {
  StackValue out;
  for (uint64_t addr : addresses) {
    if (addr == 0) break;
    if (kind == ValueKind::KernelStack)
      out.frames.push_back(ksym_name(addr));
    else if (pid >= 0)
      out.frames.push_back(usym_name(addr, pid));
    else
      out.frames.push_back(fmt::format("0x{:x}", addr));
  }
  return out;
}

void StackSymbolizers::release(const PlanQuery& query, const QuerySnapshot& snapshot) {
  if (query.stack_map.empty() || query.cumulative || query.keep_stacks) return;
  for_query(query);  // opens the map if no row has been symbolized yet
  const StackMap& m = tables_.at(query.stack_map);
  if (m.fd < 0) return;
  std::set<uint32_t> ids;
  auto collect = [&](const PerCpuEntries& entries) {
    for (size_t i = 0; i < entries.count(); ++i) {
      auto key = entries.key(i);
      for (const PlanField& f : query.keys) {
        if (f.kind != ValueKind::KernelStack && f.kind != ValueKind::UserStack) continue;
        if (f.offset + sizeof(int32_t) > key.size()) continue;
        int32_t id;
        std::memcpy(&id, key.data() + f.offset, sizeof id);
        if (id >= 0) ids.insert(static_cast<uint32_t>(id));
      }
    }
  };
  if (!query.keys.empty()) {
    collect(snapshot.values);
    for (const PerCpuEntries& h : snapshot.hists) collect(h);  // keys start with the key struct
  }
  for (uint32_t id : ids) bpf_delete_elem(m.fd, &id);
}

}  // namespace bpfql
