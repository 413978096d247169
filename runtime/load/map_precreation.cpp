#include "runtime/load/map_precreation.h"

#include <linux/bpf.h>
#include <unistd.h>

#include "runtime/load/bpf_object.h"

namespace bpfql {

ImageMap image_map_of(const PlanMap& m, uint32_t possible_cpus) {
  uint32_t entries = m.type == BPF_MAP_TYPE_PERF_EVENT_ARRAY ? possible_cpus : m.max_entries;
  return ImageMap{m.name, m.type, m.key_size, m.value_size, entries, m.flags, 0, 0};
}

MapPrecreation::MapPrecreation(const std::vector<PlanMap>& maps, uint32_t possible_cpus) {
  for (const auto& m : maps)
    if (!map_type_needs_btf(m.type)) maps_.push_back(image_map_of(m, possible_cpus));
  fds_.assign(maps_.size(), -1);
  if (maps_.empty()) return;
  thread_ = std::thread([this] {
    for (size_t i = 0; i < maps_.size(); ++i) fds_[i] = create_map(maps_[i], -1);
  });
}

MapPrecreation::~MapPrecreation() {
  wait();
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void MapPrecreation::wait() {
  if (thread_.joinable()) thread_.join();
}

int MapPrecreation::take(const ImageMap& wanted) {
  wait();
  for (size_t i = 0; i < maps_.size(); ++i) {
    const ImageMap& m = maps_[i];
    if (fds_[i] < 0 || m.name != wanted.name || m.type != wanted.type ||
        m.key_size != wanted.key_size || m.value_size != wanted.value_size ||
        m.max_entries != wanted.max_entries || m.flags != wanted.flags ||
        wanted.btf_key_type_id != 0 || wanted.btf_value_type_id != 0)
      continue;
    int fd = fds_[i];
    fds_[i] = -1;
    return fd;
  }
  return -1;
}

}  // namespace bpfql
