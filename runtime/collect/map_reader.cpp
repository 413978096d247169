// Kernel map reads: batch lookups with a get_next_key fallback (see map_reader.h).
#include "runtime/collect/map_reader.h"

#include <bcc/libbpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "runtime/collect/open_spans.h"

namespace bpfql {
namespace {

constexpr int kENOTSUPP = 524;  // the kernel-internal "not supported" some map types return

bool is_percpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
         type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

bool is_array(uint32_t type) {
  return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

// The names and expected shapes of the maps an aggregating query reads.
struct Expected {
  std::string name;
  uint32_t key_size;  // 0: any (arrays are indexed by u32)
  uint32_t value_size;
};

std::vector<Expected> expected_maps(const PlanQuery& q) {
  std::vector<Expected> out;
  if (!q.open_span_map.empty()) out.push_back({q.open_span_map, q.span_key_size, q.span_value_size});
  if (q.streaming) {
    if (!q.dropped_map.empty()) out.push_back({q.dropped_map, 0, 8});
    if (!q.lost_map.empty()) out.push_back({q.lost_map, 0, 8});
    return out;
  }
  bool keyless = q.keys.empty();
  if (!q.value_map.empty()) out.push_back({q.value_map, keyless ? 0 : q.key_size, q.value_size});
  if (!q.slot_map.empty()) out.push_back({q.slot_map, 0, q.value_size});
  for (const auto& a : q.aggregates)
    if (is_histogram(a.kind) && !a.map_name.empty())
      out.push_back({a.map_name, keyless ? 0 : q.key_size + 8, 8});
  if (!q.dropped_map.empty()) out.push_back({q.dropped_map, 0, 8});
  return out;
}

}  // namespace

std::optional<uint64_t> MapReader::count_entries(const std::string& name) const {
  const MapHandle* m = find(name);
  if (!m || m->fd < 0) return std::nullopt;
  std::vector<uint8_t> key(m->key_size), next(m->key_size);
  uint64_t n = 0;
  const void* at = nullptr;  // NULL: the first key
  while (bpf_get_next_key(m->fd, const_cast<void*>(at), next.data()) == 0) {
    ++n;
    key.swap(next);
    at = key.data();
    if (n > m->max_entries) break;  // keys deleted meanwhile restart the walk: stay bounded
  }
  return n;
}

MapReader::~MapReader() {
  for (auto& [name, m] : maps_)
    if (m.fd >= 0) close(m.fd);
}

std::string MapReader::open(const BpfObject& bpf, const Plan& plan) {
  ncpus_ = static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1));
  for (const auto& q : plan.queries) {
    for (const auto& e : expected_maps(q)) {
      if (maps_.count(e.name)) continue;
      int fd = bpf.map_fd(e.name);
      if (fd < 0) return fmt::format("query {}: map {} is not in the program", q.name, e.name);
      MapHandle h;
      h.fd = dup(fd);
      bpf_map_info info{};
      uint32_t len = sizeof info;
      if (h.fd < 0 || bpf_obj_get_info(h.fd, &info, &len) != 0) {
        if (h.fd >= 0) close(h.fd);
        return fmt::format("query {}: cannot inspect map {}: {}", q.name, e.name,
                           std::strerror(errno));
      }
      h.type = info.type;
      h.key_size = info.key_size;
      h.value_size = info.value_size;
      h.max_entries = info.max_entries;
      maps_[e.name] = h;
      if ((e.key_size != 0 && h.key_size != e.key_size) || h.value_size != e.value_size)
        return fmt::format(
            "query {}: map {} has {}-byte keys and {}-byte values, the plan says {} and {}", q.name,
            e.name, h.key_size, h.value_size, e.key_size, e.value_size);
    }
  }
  return "";
}

const MapHandle* MapReader::find(const std::string& name) const {
  auto it = maps_.find(name);
  return it == maps_.end() ? nullptr : &it->second;
}

PerCpuEntries MapReader::read_map(const MapHandle& map, bool keep) {
  if (is_array(map.type)) return read_array(map, keep);
  return read_hash(map, keep);
}

namespace {

PerCpuEntries empty_entries(const MapHandle& map, uint32_t possible_cpus) {
  PerCpuEntries e;
  e.key_size = map.key_size;
  bool percpu = is_percpu(map.type);
  e.stride = percpu ? (map.value_size + 7) / 8 * 8 : map.value_size;
  e.ncpus = percpu ? possible_cpus : 1;
  return e;
}

// Batch lookups over the whole map, deleting what was read when `remove`. Returns false (having
// read nothing) when the kernel does not do batch operations on this map.
// `keys` and `values` are the caller's scratch buffers, grown here as needed.
bool batch_read(const MapHandle& map, bool remove, PerCpuEntries& out, std::vector<uint8_t>& keys,
                std::vector<uint8_t>& values) {
  const size_t value_bytes = size_t{out.stride} * out.ncpus;
  uint32_t chunk = std::clamp<uint32_t>(map.max_entries, 1, 8192);
  auto fit = [&] {
    if (keys.size() < size_t{chunk} * map.key_size) keys.resize(size_t{chunk} * map.key_size);
    if (values.size() < chunk * value_bytes) values.resize(chunk * value_bytes);
  };
  fit();
  // Hash maps use a u32 bucket cursor, arrays a key: room for either.
  std::vector<uint8_t> cursor(std::max<uint32_t>(map.key_size, 8)), next(cursor.size());
  // Room for a full map up front: growing by doubling would copy, and fault in fresh pages for,
  // about twice the final size (the memory is only touched as entries arrive).
  constexpr size_t kMaxReserve = 64 << 20;
  if (size_t want = size_t{map.max_entries} * (map.key_size + value_bytes); want <= kMaxReserve) {
    out.keys.reserve(size_t{map.max_entries} * map.key_size);
    out.values.reserve(size_t{map.max_entries} * value_bytes);
  }
  bool first = true;
  for (;;) {
    uint32_t count = chunk;
    int ret =
        remove ? bpf_lookup_and_delete_batch(
                     map.fd, first ? nullptr : reinterpret_cast<__u32*>(cursor.data()),
                     reinterpret_cast<__u32*>(next.data()), keys.data(), values.data(), &count)
               : bpf_lookup_batch(map.fd, first ? nullptr : reinterpret_cast<__u32*>(cursor.data()),
                                  reinterpret_cast<__u32*>(next.data()), keys.data(), values.data(),
                                  &count);
    int err = ret < 0 ? errno : 0;
    if (ret < 0 && err != ENOENT) {
      if (err == ENOSPC && count == 0) {  // one hash bucket holds more than the buffer
        chunk *= 2;
        fit();
        continue;
      }
      if (first && (err == EINVAL || err == kENOTSUPP || err == EOPNOTSUPP)) return false;
      count = 0;  // anything else: keep what was read so far
      err = ENOENT;
    }
    out.keys.insert(out.keys.end(), keys.begin(), keys.begin() + size_t{count} * map.key_size);
    out.values.insert(out.values.end(), values.begin(), values.begin() + count * value_bytes);
    if (err == ENOENT) return true;
    cursor.swap(next);
    first = false;
  }
}

}  // namespace

PerCpuEntries MapReader::read_hash(const MapHandle& map, bool keep) {
  PerCpuEntries out = empty_entries(map, ncpus_);
  if (batch_ok_ && batch_read(map, !keep, out, batch_keys_, batch_values_)) return out;
  batch_ok_ = false;
  return read_hash_by_iteration(map, keep);
}

// Without batch operations: collect the keys first (deleting while iterating restarts the walk),
// then look each up and delete it. Events between the lookup and the delete are lost.
PerCpuEntries MapReader::read_hash_by_iteration(const MapHandle& map, bool keep) {
  PerCpuEntries out = empty_entries(map, ncpus_);
  std::vector<uint8_t> all_keys;
  std::vector<uint8_t> key(map.key_size), next(map.key_size);
  void* prev = nullptr;
  for (uint32_t n = 0; n < 2 * map.max_entries + 1; ++n) {
    if (bpf_get_next_key(map.fd, prev, next.data()) != 0) break;
    all_keys.insert(all_keys.end(), next.begin(), next.end());
    key.swap(next);
    prev = key.data();
  }
  std::vector<uint8_t> value(size_t{out.stride} * out.ncpus);
  for (size_t at = 0; at + map.key_size <= all_keys.size(); at += map.key_size) {
    uint8_t* k = all_keys.data() + at;
    if (bpf_lookup_elem(map.fd, k, value.data()) != 0) continue;
    out.add(std::span(k, map.key_size), value);
    if (!keep) bpf_delete_elem(map.fd, k);
  }
  return out;
}

// Arrays keep every index: read them all, then zero them unless `keep`.
PerCpuEntries MapReader::read_array(const MapHandle& map, bool keep) {
  PerCpuEntries out = empty_entries(map, ncpus_);
  if (!batch_ok_ || !batch_read(map, false, out, batch_keys_, batch_values_)) {
    batch_ok_ = false;
    std::vector<uint8_t> value(size_t{out.stride} * out.ncpus);
    for (uint32_t i = 0; i < map.max_entries; ++i) {
      if (bpf_lookup_elem(map.fd, &i, value.data()) != 0) continue;
      out.add(std::span(reinterpret_cast<const uint8_t*>(&i), 4), value);
    }
  }
  if (keep || out.count() == 0) return out;
  std::vector<uint8_t> zeros(out.values.size(), 0);
  uint32_t count = static_cast<uint32_t>(out.count());
  if (!batch_ok_ || bpf_update_batch(map.fd, out.keys.data(), zeros.data(), &count) != 0) {
    std::vector<uint8_t> zero(size_t{out.stride} * out.ncpus, 0);
    for (size_t i = 0; i < out.count(); ++i)
      bpf_update_elem(map.fd, const_cast<uint8_t*>(out.key(i).data()), zero.data(), BPF_ANY);
  }
  return out;
}

// Arrays (keyless queries, their histograms, dropped counters) are never cleared when they hold
// only additive counters: zeroing after the read would lose what the program adds between the
// read and the write (~150 events per print at 1.4M events/s). Each read returns the difference
// from the previous one instead. Min/max cannot be differenced: those arrays are still zeroed.
PerCpuEntries MapReader::read_array_delta(const MapHandle& map, const std::string& name) {
  PerCpuEntries now = read_array(map, /*keep=*/true);
  PerCpuEntries delta = now;
  std::vector<uint8_t>& before = previous_[name];
  if (before.size() == now.values.size()) {
    for (size_t at = 0; at + 8 <= now.values.size(); at += 8) {
      uint64_t a, b;
      std::memcpy(&a, now.values.data() + at, 8);
      std::memcpy(&b, before.data() + at, 8);
      uint64_t d = a - b;  // wraps like the counters (sums may be signed: two's complement)
      std::memcpy(delta.values.data() + at, &d, 8);
    }
  }
  before = std::move(now.values);
  return delta;
}

PerCpuEntries MapReader::read_counters(const std::string& name, bool keep, bool additive,
                                       bool last) {
  const MapHandle* m = find(name);
  if (!m) return {};
  if (!keep && additive && is_array(m->type) && m->value_size % 8 == 0)
    return read_array_delta(*m, name);
  // The last read of a run empties nothing: the maps go with the process, and deleting 100k
  // hash entries costs about as much as reading them.
  return read_map(*m, keep || last);
}

// PlanQuery::slot_map: slot i holds the values of system call number i (what the value map
// would hold under that key). Each slot that counted something becomes an entry of `values`,
// keyed as the hash is: keys[0] = i, every other byte 0. The hash never holds such a number.
void MapReader::add_slots(const PlanQuery& q, const PerCpuEntries& slots, PerCpuEntries& values) {
  if (q.keys.empty() || slots.count() == 0) return;
  const PlanField& number = q.keys[0];
  if (values.key_size == 0) {  // the hash read nothing: shape the entries as it would
    values.key_size = q.key_size;
    values.stride = slots.stride;
    values.ncpus = slots.ncpus;
  }
  if (values.stride != slots.stride || values.ncpus != slots.ncpus || number.size > 8 ||
      number.offset + number.size > q.key_size)
    return;  // MapReader::open checked the sizes; the plan's key cannot disagree
  std::vector<uint8_t> key(q.key_size, 0);
  for (size_t i = 0; i < slots.count(); ++i) {
    auto value = slots.value(i);
    if (std::all_of(value.begin(), value.end(), [](uint8_t b) { return b == 0; })) continue;
    uint32_t index = 0;
    std::memcpy(&index, slots.key(i).data(), std::min<size_t>(4, slots.key_size));
    uint64_t wide = index;
    std::memcpy(key.data() + number.offset, &wide, number.size);  // little-endian
    values.add(key, value);
  }
}

// report: open: the rows are the spans still open, read (never deleted) from their hash. A batch
// lookup walks the hash bucket by bucket, so spans that end meanwhile are not read twice.
QuerySnapshot MapReader::read_open_spans(const PlanQuery& q) {
  PerCpuEntries spans;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // bpf_ktime_get_ns's clock
  if (const MapHandle* m = find(q.open_span_map)) spans = read_map(*m, /*keep=*/true);
  uint64_t now_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000ULL +
                    static_cast<uint64_t>(now.tv_nsec);
  QuerySnapshot s = open_span_snapshot(q, spans, now_ns);
  s.dropped = read_dropped(q);
  return s;
}

QuerySnapshot MapReader::read(const PlanQuery& q, bool last) {
  if (q.report_open) return read_open_spans(q);
  QuerySnapshot s;
  bool additive = std::none_of(q.aggregates.begin(), q.aggregates.end(), [](const PlanAggregate& a) {
    return a.kind == AggKind::Min || a.kind == AggKind::Max;
  });
  if (find(q.value_map)) s.values = read_counters(q.value_map, q.cumulative, additive, last);
  if (find(q.slot_map)) add_slots(q, read_counters(q.slot_map, q.cumulative, additive, last), s.values);
  s.hists.resize(q.aggregates.size());
  for (size_t i = 0; i < q.aggregates.size(); ++i) {
    const auto& a = q.aggregates[i];
    if (!is_histogram(a.kind)) continue;
    if (find(a.map_name))
      s.hists[i] = read_counters(a.map_name, q.cumulative, /*additive=*/true, last);
  }
  s.dropped = read_dropped(q);
  return s;
}

std::optional<uint64_t> MapReader::read_lost(const PlanQuery& q) {
  const MapHandle* m = find(q.lost_map);
  if (!m) return std::nullopt;
  PerCpuEntries d = read_array(*m, /*keep=*/true);
  uint64_t lost = 0;
  for (size_t i = 0; i < d.count(); ++i) lost += sum_percpu_u64(d.value(i), d.ncpus);
  return lost;
}

uint64_t MapReader::read_dropped(const PlanQuery& q) {
  if (!find(q.dropped_map)) return 0;
  PerCpuEntries d = read_counters(q.dropped_map, q.cumulative, /*additive=*/true, /*last=*/false);
  uint64_t dropped = 0;
  for (size_t i = 0; i < d.count(); ++i) dropped += sum_percpu_u64(d.value(i), d.ncpus);
  return dropped;
}

}  // namespace bpfql
