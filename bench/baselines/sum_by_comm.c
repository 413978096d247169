// sum(retval) by comm on syscalls:sys_exit_read (bytes returned by read, per task name).
#define TASK_COMM_LEN 16  /* as libbpf-tools' headers define it; bcc includes no sched.h */

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(bytes, struct key_t, s64, 10240);

TRACEPOINT_PROBE(syscalls, sys_exit_read) {
  struct key_t key = {};
  s64 zero = 0, *sum;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  sum = bytes.lookup_or_try_init(&key, &zero);
  if (sum)
    *sum += args->ret;
  return 0;
}
