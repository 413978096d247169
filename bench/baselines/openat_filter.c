// where args.filename == TARGET, count() on syscalls:sys_enter_openat. The name is read from
// user memory once (bounded, 64 bytes as bpfql and bpftrace read) and compared with a bounded
// byte loop (bpf_strncmp against a literal is rejected here). TARGET comes from -D TARGET=...
// (default "/bpfql-bench-missing", the path the workload opens: missing, so that no file is
// allocated and freed per call). One counter, no key: a per-CPU array of one slot.
#ifndef TARGET
#define TARGET "/bpfql-bench-missing"
#endif

BPF_PERCPU_ARRAY(matches, u64, 1);

TRACEPOINT_PROBE(syscalls, sys_enter_openat) {
  const char target[] = TARGET;
  char name[64];

  if (bpf_probe_read_user_str(name, sizeof(name), args->filename) != sizeof(target))
    return 0;
#pragma unroll
  for (int i = 0; i < sizeof(target); i++)
    if (name[i] != target[i])
      return 0;

  u32 slot = 0;
  u64 *count = matches.lookup(&slot);
  if (count)
    (*count)++;
  return 0;
}
