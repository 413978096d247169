// count by comm on raw_syscalls:sys_enter, the way libbpf-tools' syscount does it:
// a per-CPU hash keyed by the task name, lookup-or-init, a plain increment (no atomics:
// per-CPU values are only ever touched by their own CPU).
#define TASK_COMM_LEN 16  /* as libbpf-tools' headers define it; bcc includes no sched.h */

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
