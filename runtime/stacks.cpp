// Stack symbolization through the query's stack map and display.h's symbolizers.
#include "runtime/stacks.h"

#include <fmt/format.h>

#include "runtime/display.h"

namespace bpfql {

StackSymbolizer StackSymbolizers::for_query(const PlanQuery& query) {
  if (query.stack_map.empty()) return {};
  std::string map = query.stack_map;
  if (!tables_.count(map))
    tables_[map] = std::make_unique<ebpf::BPFStackTable>(bpf_.get_stack_table(map));
  return [this, map](ValueKind kind, int32_t id, int pid) { return symbolize(map, kind, id, pid); };
}

// A negative id is the error bpf_get_stackid() returned (no user stack in a kernel thread, or
// the stack map was full): such a stack prints as no frames.
StackValue StackSymbolizers::symbolize(const std::string& map, ValueKind kind, int32_t id,
                                       int pid) {
  StackValue out;
  if (id < 0) return out;
  for (uintptr_t addr : tables_.at(map)->get_stack_addr(id)) {
    if (kind == ValueKind::KernelStack)
      out.frames.push_back(ksym_name(addr));
    else if (pid >= 0)
      out.frames.push_back(usym_name(addr, pid));
    else
      out.frames.push_back(fmt::format("0x{:x}", addr));
  }
  return out;
}

}  // namespace bpfql
