// Stack ids (from BPF_STACK_TRACE maps) → symbolized frames, for kstack/ustack fields.
#pragma once

#include <bcc/BPF.h>

#include <map>
#include <memory>
#include <string>

#include "compiler/plan.h"
#include "runtime/decode.h"

namespace bpfql {

class StackSymbolizers {
 public:
  explicit StackSymbolizers(ebpf::BPF& bpf) : bpf_(bpf) {}

  // The symbolizer for a query's stack map (empty function when the query has none).
  StackSymbolizer for_query(const PlanQuery& query);

 private:
  StackValue symbolize(const std::string& map, ValueKind kind, int32_t id, int pid);

  ebpf::BPF& bpf_;
  std::map<std::string, std::unique_ptr<ebpf::BPFStackTable>> tables_;
};

}  // namespace bpfql
