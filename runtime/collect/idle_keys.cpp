// Idle-key expiry for serve (see idle_keys.h).
#include "runtime/collect/idle_keys.h"

#include <bpf/bpf.h>

#include <string_view>
#include <unordered_set>

namespace bpfql {
namespace {

uint64_t hash_bytes(std::span<const uint8_t> bytes, uint64_t seed) {
  // FNV-1a, 64-bit: enough to tell "changed" from "the same" between two reads of one key.
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string key_of(std::span<const uint8_t> key, uint32_t key_size) {
  return std::string(reinterpret_cast<const char*>(key.data()), key_size);
}

// Keeps the entries of `e` whose group key (its first key_size bytes) is not in `gone`.
void remove_keys(PerCpuEntries& e, uint32_t key_size, const std::unordered_set<std::string>& gone) {
  if (e.count() == 0) return;
  size_t value_bytes = static_cast<size_t>(e.stride) * e.ncpus;
  std::vector<uint8_t> keys, values;
  keys.reserve(e.keys.size());
  values.reserve(e.values.size());
  for (size_t i = 0; i < e.count(); ++i) {
    auto k = e.key(i);
    if (gone.count(key_of(k, key_size))) continue;
    keys.insert(keys.end(), k.begin(), k.end());
    auto v = e.value(i);
    values.insert(values.end(), v.begin(), v.begin() + static_cast<std::ptrdiff_t>(value_bytes));
  }
  e.keys = std::move(keys);
  e.values = std::move(values);
}

}  // namespace

uint64_t IdleKeys::expire(const PlanQuery& q, QuerySnapshot& snapshot, const BpfObject& bpf,
                          Clock::time_point now) {
  if (q.key_size == 0 || !q.stack_map.empty() || after_.count() <= 0) return 0;
  const uint32_t ks = q.key_size;
  // This read's hash of each key's values: its value entry and its histogram entries (summed,
  // so that the order the kernel lists them in does not matter).
  std::unordered_map<std::string, uint64_t> now_hash;
  for (size_t i = 0; i < snapshot.values.count(); ++i)
    now_hash[key_of(snapshot.values.key(i), ks)] += hash_bytes(snapshot.values.value(i), 1);
  for (size_t a = 0; a < snapshot.hists.size(); ++a) {
    const PerCpuEntries& h = snapshot.hists[a];
    for (size_t i = 0; i < h.count(); ++i) {
      auto k = h.key(i);
      // key struct, then the u64 slot
      now_hash[key_of(k, ks)] += hash_bytes(h.value(i), 2 + a) ^ hash_bytes(k.subspan(ks), 7);
    }
  }
  PerQuery& mine = queries_[q.name];
  std::unordered_set<std::string> gone;
  std::unordered_map<std::string, Seen> kept;
  kept.reserve(now_hash.size());
  for (auto& [key, hash] : now_hash) {
    auto it = mine.keys.find(key);
    Seen seen{hash, now};
    if (it != mine.keys.end() && it->second.hash == hash) seen.changed = it->second.changed;
    if (now - seen.changed >= after_)
      gone.insert(key);
    else
      kept.emplace(key, seen);
  }
  mine.keys = std::move(kept);  // keys no longer in the map are forgotten too
  if (gone.empty()) return 0;

  int values_fd = q.value_map.empty() ? -1 : bpf.map_fd(q.value_map);
  for (const auto& key : gone)
    if (values_fd >= 0) bpf_map_delete_elem(values_fd, key.data());
  for (size_t a = 0; a < snapshot.hists.size() && a < q.aggregates.size(); ++a) {
    const PerCpuEntries& h = snapshot.hists[a];
    int fd = q.aggregates[a].map_name.empty() ? -1 : bpf.map_fd(q.aggregates[a].map_name);
    if (fd < 0) continue;
    for (size_t i = 0; i < h.count(); ++i) {
      auto k = h.key(i);
      if (gone.count(key_of(k, ks))) bpf_map_delete_elem(fd, k.data());
    }
  }
  remove_keys(snapshot.values, ks, gone);
  for (auto& h : snapshot.hists) remove_keys(h, ks, gone);
  mine.expired += gone.size();
  return gone.size();
}

uint64_t IdleKeys::expired(const PlanQuery& q) const {
  auto it = queries_.find(q.name);
  return it == queries_.end() ? 0 : it->second.expired;
}

}  // namespace bpfql
