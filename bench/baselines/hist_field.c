// hist(args.count) on syscalls:sys_enter_read: power-of-two buckets in a per-CPU array,
// indexed by log2 (libbpf-tools' bits.bpf.h log2l). Slot 0 holds 0, slot k holds [2^(k-1), 2^k).
BPF_PERCPU_ARRAY(hist, u64, 65);

static __always_inline u32 log2_u32(u32 v) {
  u32 r, shift;

  r = (v > 0xFFFF) << 4; v >>= r;
  shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
  shift = (v > 0xF) << 2; v >>= shift; r |= shift;
  shift = (v > 0x3) << 1; v >>= shift; r |= shift;
  r |= (v >> 1);
  return r;
}

static __always_inline u32 log2_u64(u64 v) {
  u32 hi = v >> 32;
  return hi ? log2_u32(hi) + 32 : log2_u32(v);
}

TRACEPOINT_PROBE(syscalls, sys_enter_read) {
  u64 value = args->count;
  u32 slot = value ? log2_u64(value) + 1 : 0;
  u64 *count = hist.lookup(&slot);

  if (count)
    (*count)++;
  return 0;
}
