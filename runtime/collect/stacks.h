// Stacks → symbolized frames, for kstack/ustack fields: ids of a BPF_STACK_TRACE map (keys of
// aggregates; read by the map's fd, a dup this object owns), or the addresses a streamed event
// carries itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "compiler/plan.h"
#include "runtime/load/bpf_object.h"
#include "runtime/collect/collector.h"
#include "runtime/collect/decode.h"

namespace bpfql {

// Addresses → frames: kernel symbols, or the process's user symbols (hex without a pid).
StackValue symbolize_frames(ValueKind kind, std::span<const uint64_t> addresses, int pid);

class StackSymbolizers {
 public:
  explicit StackSymbolizers(const BpfObject& bpf) : bpf_(bpf) {}
  ~StackSymbolizers();
  StackSymbolizers(const StackSymbolizers&) = delete;
  StackSymbolizers& operator=(const StackSymbolizers&) = delete;

  // The symbolizer for a query's stack map (empty function when the query has none).
  StackSymbolizer for_query(const PlanQuery& query);

  // After a print that emptied the query's maps: deletes the stacks its keys referred to, so that
  // a long run does not fill the stack map (bpf_get_stackid then fails and stacks print empty).
  // A key recorded between that read and this delete may lose its stack (printed with no frames).
  void release(const PlanQuery& query, const QuerySnapshot& snapshot);

 private:
  struct StackMap {
    int fd = -1;
    uint32_t value_size = 0;  // bytes: the u64 addresses of one stack, 0-terminated if shorter
  };
  StackValue symbolize(const std::string& map, ValueKind kind, int32_t id, int pid);

  const BpfObject& bpf_;
  std::map<std::string, StackMap> tables_;
  // Stacks of maps whose ids are never freed (cumulative queries, as `serve` runs them, and
  // stacks captured at a span's begin), symbolized once: a print re-reads every key since the
  // start, and symbolizing a user stack again costs a symbol lookup per frame (and the
  // process's symbol tables, once it has exited). Keyed by map, kind, id and pid: one id may
  // be the same addresses in two processes.
  std::map<std::tuple<std::string, ValueKind, int32_t, int>, StackValue> kept_;
};

}  // namespace bpfql
