// Reading a query's maps from the kernel into a QuerySnapshot (collector.h decodes it).
// Per-CPU hashes are read with batch lookups (and deleted in the same call unless the query is
// cumulative); kernels without batch support fall back to get_next_key iteration. Per-CPU arrays
// (keyless queries, keyless histograms, system call slots: PlanQuery::slot_map) are read as
// differences from the previous read when they hold additive counters, else read and zeroed.
// Not thread-safe: one thread reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/plan.h"
#include "runtime/load/bpf_object.h"
#include "runtime/collect/collector.h"

namespace bpfql {

// A map's fd (a dup that bpfql owns) and its kernel-side shape.
struct MapHandle {
  int fd = -1;
  uint32_t type = 0;
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;
};

class MapReader {
 public:
  MapReader() = default;
  ~MapReader();
  MapReader(const MapReader&) = delete;
  MapReader& operator=(const MapReader&) = delete;

  // Finds every map the Plan's queries read (a streaming query's: its dropped counter) and checks
  // its shape against the Plan.
  // Returns "" or what does not match (a bpfql bug: decoding would produce garbage).
  std::string open(const BpfObject& bpf, const Plan& plan);

  // Reads one query's value map, histogram maps and dropped counter; clears them unless the
  // query is cumulative (the dropped counter too) or this is the `last` read before exit.
  QuerySnapshot read(const PlanQuery& query, bool last = false);
  // The query's dropped counter, summed over CPUs; cleared unless the query is cumulative.
  uint64_t read_dropped(const PlanQuery& query);
  // A streaming query's count of events its perf buffer had no room for, since the start
  // (never cleared); nullopt when the Plan has no such counter.
  std::optional<uint64_t> read_lost(const PlanQuery& query);

  // How many keys a hash holds (a span's open begins); nullopt when the map is not open.
  std::optional<uint64_t> count_entries(const std::string& name) const;

  // Reads (and unless `keep`, empties) one map. Exposed for benchmarks.
  PerCpuEntries read_map(const MapHandle& map, bool keep);

  bool used_batch() const { return batch_ok_; }
  // Reads as on kernels without batch operations (tests and benchmarks of the fallback).
  void disable_batch() { batch_ok_ = false; }

 private:
  const MapHandle* find(const std::string& name) const;
  PerCpuEntries read_hash(const MapHandle& map, bool keep);
  QuerySnapshot read_open_spans(const PlanQuery& query);
  void add_slots(const PlanQuery& query, const PerCpuEntries& slots, PerCpuEntries& values);
  PerCpuEntries read_hash_by_iteration(const MapHandle& map, bool keep);
  PerCpuEntries read_array(const MapHandle& map, bool keep);
  // An array of additive u64 counters, as the difference from the previous read (see .cpp).
  PerCpuEntries read_array_delta(const MapHandle& map, const std::string& name);
  // Reads and clears (unless `keep`) a map: deltas for arrays of additive counters.
  PerCpuEntries read_counters(const std::string& name, bool keep, bool additive, bool last);

  std::map<std::string, MapHandle> maps_;
  std::map<std::string, std::vector<uint8_t>> previous_;  // read_array_delta's last values
  // Batch reads' buffers, kept from read to read: allocating (and zeroing) a chunk of 8192 keys
  // and values for every map at every print was a tenth of `serve`'s CPU with the library.
  std::vector<uint8_t> batch_keys_, batch_values_;
  uint32_t ncpus_ = 1;
  bool batch_ok_ = true;  // false once the kernel said it has no batch operations
};

}  // namespace bpfql
