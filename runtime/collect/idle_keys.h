// `bpfql serve --expire-after D`: group keys whose values have not changed for D are removed from
// the kernel maps (and so from the exposition), which bounds the keys of processes, files or
// connections that are gone. The kernel has no per-key update time, so each read notes, per key,
// a hash of its values; a key whose hash stayed the same for D is deleted from the query's value
// map and from each of its histogram maps. A series that comes back later starts again from 0,
// which Prometheus's rate() and increase() take as a counter reset. An event that lands between
// the read and the delete (microseconds) is lost with the key.
//
// Keyless queries (one series) never expire; nor do stack-keyed ones (their stack ids live in a
// stack map of their own).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "compiler/plan.h"
#include "runtime/collect/collector.h"
#include "runtime/load/bpf_object.h"

namespace bpfql {

class IdleKeys {
 public:
  using Clock = std::chrono::steady_clock;
  explicit IdleKeys(std::chrono::nanoseconds after) : after_(after) {}

  // After a read of `q` (cumulative) at `now`: deletes the keys idle for longer than the limit
  // from `q`'s maps in `bpf` and from `snapshot`. Returns how many keys it deleted now.
  uint64_t expire(const PlanQuery& q, QuerySnapshot& snapshot, const BpfObject& bpf, Clock::time_point now);

  // Keys of `q` deleted so far.
  uint64_t expired(const PlanQuery& q) const;

 private:
  struct Seen {
    uint64_t hash = 0;
    Clock::time_point changed;
  };
  struct PerQuery {
    std::unordered_map<std::string, Seen> keys;  // by key bytes
    uint64_t expired = 0;
  };
  std::chrono::nanoseconds after_;
  std::unordered_map<std::string, PerQuery> queries_;  // by query name
};

}  // namespace bpfql
