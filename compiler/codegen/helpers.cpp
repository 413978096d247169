#include "compiler/codegen/helpers.h"

#include <fmt/format.h>

#include "compiler/buckets.h"

namespace bpfql::codegen {
namespace {

// An ld_imm64 of the marker, which clang cannot fold into anything: the loader finds it and
// writes the value given at run time in its place.
constexpr const char* kRuntimeConstant =
    R"(/* a number given when bpfql runs (-p, --pid): the loader writes it into this instruction */
#define BPFQL_CONST(marker) ({ u64 __c; asm("%0 = " #marker " ll" : "=r"(__c)); __c; })
)";

// An empty asm that may touch memory: no instruction, but LLVM cannot merge the memsets on
// either side of it into one (which it would make a call, refused in BPF).
constexpr const char* kBarrier =
    R"(/* keeps the memsets on either side apart: LLVM would merge them into one call */
#define BPFQL_BARRIER() asm volatile("" ::: "memory")
)";

// An empty asm that takes a register and gives it back: no instruction, but LLVM no longer knows
// the value it holds, so it cannot reuse an address computed from the old one.
constexpr const char* kOpaque =
    R"(/* a value LLVM must take as new: no address computed from the old one is reused */
#define BPFQL_OPAQUE(x) asm volatile("" : "+r"(x))
)";

// What raw_syscalls' raw tracepoints hand a program instead of a record (fusion.h).
constexpr const char* kRawSyscalls =
    R"(/* raw_syscalls' raw tracepoints: the kernel builds no record, it hands the program these */
struct bpfql_raw_sys_enter { u64 regs; long id; };  /* the call's struct pt_regs *, its number */
struct bpfql_raw_sys_exit { u64 regs; long ret; };  /* the call's struct pt_regs *, its result */
/* one register of the call's struct pt_regs, at the offset the kernel's BTF gives */
static __always_inline u64 bpfql_syscall_reg(u64 regs, u32 offset) {
  u64 value = 0;
  bpf_probe_read_kernel(&value, sizeof(value), (void *)(regs + offset));
  return value;
}
)";

// comm read once for the bodies of a fused program that run on the same events (fusion.h): the
// first to need it reads it into bpfql_comm, the others copy it. A destination of another size
// reads its own (bpf_get_current_comm pads or cuts to the size given); sizeof decides at compile
// time.
constexpr const char* kSharedComm =
    R"(/* comm into dest, read once for the bodies of one event (bpfql_comm, bpfql_comm_read) */
#define BPFQL_SHARED_COMM(dest)                                   \
  do {                                                            \
    if (sizeof(dest) != sizeof(bpfql_comm)) {                     \
      bpf_get_current_comm(dest, sizeof(dest));                   \
    } else {                                                      \
      if (!bpfql_comm_read) {                                     \
        bpf_get_current_comm(bpfql_comm, sizeof(bpfql_comm));     \
        bpfql_comm_read = 1;                                      \
      }                                                           \
      __builtin_memcpy(dest, bpfql_comm, sizeof(bpfql_comm));     \
    }                                                             \
  } while (0)
)";

constexpr const char* kLog2 = R"(/* floor(log2(v)) for v > 0, without loops */
static __always_inline u32 bpfql_log2(u64 v) {
  u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r;
}
)";

constexpr const char* kHistSlot =
    R"(/* hist(): slot 0: v < 0; 1: v == 0; k + 2: 2^k <= v < 2^(k+1) (compiler/buckets.h) */
static __always_inline u32 bpfql_hist_slot(u64 v) {
  return v == 0 ? 1 : bpfql_log2(v) + 2;
}
)";

constexpr const char* kHistSlotS = R"(static __always_inline u32 bpfql_hist_slot_s(s64 v) {
  return v < 0 ? 0 : bpfql_hist_slot((u64)v);
}
)";

// `last` is the slot of v >= max, passed as a constant so no division by a variable is needed
// to find it.
constexpr const char* kLhistSlot =
    R"(/* lhist(): slot 0: v < min; 1 + (v - min) / step: min <= v < max; last: v >= max */
static __always_inline u32 bpfql_lhist_slot(u64 v, s64 min, s64 max, u64 step, u32 last) {
  if (min >= 0 && v < (u64)min) return 0;
  if (max <= 0 || v >= (u64)max) return last;
  return 1 + (u32)((v - (u64)min) / step);
}
)";

constexpr const char* kLhistSlotS =
    R"(static __always_inline u32 bpfql_lhist_slot_s(s64 v, s64 min, s64 max, u64 step, u32 last) {
  if (v < min) return 0;
  if (v >= max) return last;
  return 1 + (u32)(((u64)v - (u64)min) / step);
}
)";

constexpr const char* kLogLinearSlot =
    R"(/* percentile(): log-linear slots, 16 per power of two (compiler/buckets.h) */
static __always_inline u32 bpfql_log_linear_slot(u64 v) {
  if (v < 16) return (u32)v;
  u32 e = bpfql_log2(v);
  return 16 + (e - 4) * 16 + (u32)((v >> (e - 4)) & 15);
}
)";

constexpr const char* kLogLinearSlotS =
    R"(/* a negative value: 976 slots more, by magnitude */
static __always_inline u32 bpfql_log_linear_slot_s(s64 v) {
  return v < 0 ? 976 + bpfql_log_linear_slot(0 - (u64)v) : bpfql_log_linear_slot((u64)v);
}
)";

constexpr const char* kSDiv =
    R"(/* signed division through unsigned (x / 0 is 0, as the BPF ISA defines it) */
static __always_inline s64 bpfql_sdiv(s64 a, s64 b) {
  u64 ua = a < 0 ? -(u64)a : (u64)a;
  u64 ub = b < 0 ? -(u64)b : (u64)b;
  u64 q = ub ? ua / ub : 0;
  return (a < 0) != (b < 0) ? -(s64)q : (s64)q;
}
)";

constexpr const char* kSMod =
    R"(/* signed modulo through unsigned: the sign of the dividend (x % 0 is x, as the BPF ISA defines it) */
static __always_inline s64 bpfql_smod(s64 a, s64 b) {
  u64 ua = a < 0 ? -(u64)a : (u64)a;
  u64 ub = b < 0 ? -(u64)b : (u64)b;
  u64 r = ub ? ua % ub : ua;
  return a < 0 ? -(s64)r : (s64)r;
}
)";

const char* text_of(CHelper helper) {
  switch (helper) {
    case CHelper::Log2:
      return kLog2;
    case CHelper::HistSlot:
      return kHistSlot;
    case CHelper::HistSlotS:
      return kHistSlotS;
    case CHelper::LhistSlot:
      return kLhistSlot;
    case CHelper::LhistSlotS:
      return kLhistSlotS;
    case CHelper::LogLinearSlot:
      return kLogLinearSlot;
    case CHelper::LogLinearSlotS:
      return kLogLinearSlotS;
    case CHelper::SDiv:
      return kSDiv;
    case CHelper::SMod:
      return kSMod;
    case CHelper::RuntimeConstant:
      return kRuntimeConstant;
    case CHelper::Barrier:
      return kBarrier;
    case CHelper::Opaque:
      return kOpaque;
    case CHelper::RawSyscalls:
      return kRawSyscalls;
    case CHelper::SharedComm:
      return kSharedComm;
  }
  return "";
}

}  // namespace

static_assert(buckets::kLogLinearSubBits == 4, "bpfql_log_linear_slot assumes 16 sub-buckets");
static_assert(buckets::kLogLinearSlots == 976, "bpfql_log_linear_slot_s puts negatives at 976");
static_assert(buckets::kHistSlots == 66, "bpfql_hist_slot assumes 66 slots");

void use_helper(std::set<CHelper>& used, CHelper helper) {
  used.insert(helper);
  switch (helper) {
    case CHelper::HistSlot:
    case CHelper::LogLinearSlot:
      use_helper(used, CHelper::Log2);
      break;
    case CHelper::HistSlotS:
      use_helper(used, CHelper::HistSlot);
      break;
    case CHelper::LogLinearSlotS:
      use_helper(used, CHelper::LogLinearSlot);
      break;
    default:
      break;
  }
}

std::string helper_definitions(const std::set<CHelper>& used) {
  std::string out;
  for (CHelper helper : used) {  // the enum order is a dependency order
    if (!out.empty()) out += "\n";
    out += text_of(helper);
  }
  return out;
}

}  // namespace bpfql::codegen
