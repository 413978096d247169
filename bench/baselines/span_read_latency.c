// read() latency: sys_enter_read → sys_exit_read keyed by thread id, hist(duration) in
// power-of-two buckets — libbpf-tools' syscall/func latency pattern: a hash of start
// timestamps, look up and delete at exit, log2 slot in a per-CPU array.
BPF_HASH(start, u32, u64, 10240);
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
  u32 tid = bpf_get_current_pid_tgid();
  u64 ts = bpf_ktime_get_ns();

  start.update(&tid, &ts);
  return 0;
}

TRACEPOINT_PROBE(syscalls, sys_exit_read) {
  u32 tid = bpf_get_current_pid_tgid();
  u64 *tsp = start.lookup(&tid);

  if (!tsp)
    return 0;
  u64 delta = bpf_ktime_get_ns() - *tsp;
  start.delete(&tid);

  u32 slot = delta ? log2_u64(delta) + 1 : 0;
  u64 *count = hist.lookup(&slot);
  if (count)
    (*count)++;
  return 0;
}
