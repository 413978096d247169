// where pid == 1, count by comm, on raw_syscalls:sys_enter. Filter first: the pid check
// costs one helper call and rejects the benchmark's events before the comm is read.
#define TASK_COMM_LEN 16  /* as libbpf-tools' headers define it; bcc includes no sched.h */

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
  u32 pid = bpf_get_current_pid_tgid() >> 32;
  if (pid != 1)
    return 0;

  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
