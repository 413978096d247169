// Small static inline C functions the generated programs share, emitted only when used. The
// histogram slot functions do in the kernel exactly what compiler/buckets.h says.
#pragma once

#include <set>
#include <string>

namespace bpfql::codegen {

enum class CHelper {
  Log2,           // floor(log2(v)) for v > 0
  HistSlot,       // hist(), unsigned value
  HistSlotS,      // hist(), signed value
  LhistSlot,      // lhist(), unsigned value
  LhistSlotS,     // lhist(), signed value
  LogLinearSlot,  // percentile(), unsigned value
  LogLinearSlotS,
  SDiv,  // signed division and modulo (the BPF ISA of LLVM 14 has only unsigned ones)
  SMod,
  RuntimeConstant,  // BPFQL_CONST(marker): a value the loader writes in (plan.h)
  Barrier,          // BPFQL_BARRIER(): keeps the memsets of a large struct's zeroing apart
  Opaque,           // BPFQL_OPAQUE(x): x as a value LLVM cannot relate to what it was before
  RawSyscalls,      // raw_syscalls' raw tracepoint contexts, bpfql_syscall_reg() (fusion.h)
  SharedComm,       // BPFQL_SHARED_COMM(dest): comm once for a fused program's bodies (fusion.h)
};

// Adds `helper` and whatever it calls.
void use_helper(std::set<CHelper>& used, CHelper helper);

// The definitions of `used`, in dependency order.
std::string helper_definitions(const std::set<CHelper>& used);

}  // namespace bpfql::codegen
