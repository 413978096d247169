// count by args.offset on syscalls:sys_enter_lseek: the 100,000-key map-read benchmark
// (the workload seeks to 100,000 distinct offsets). Per-CPU hash, lookup-or-init.
BPF_PERCPU_HASH(counts, u64, u64, 131072);

TRACEPOINT_PROBE(syscalls, sys_enter_lseek) {
  u64 offset = args->offset;
  u64 zero = 0, *count;

  count = counts.lookup_or_try_init(&offset, &zero);
  if (count)
    (*count)++;
  return 0;
}
