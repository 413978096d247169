// count by pid (the process id, tgid) on raw_syscalls:sys_enter: per-CPU hash, lookup-or-init.
BPF_PERCPU_HASH(counts, u32, u64, 10240);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
  u32 pid = bpf_get_current_pid_tgid() >> 32;
  u64 zero = 0, *count;

  count = counts.lookup_or_try_init(&pid, &zero);
  if (count)
    (*count)++;
  return 0;
}
