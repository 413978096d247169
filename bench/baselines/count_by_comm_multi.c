// count by comm from one function attached to several tracepoints (the harness passes
// -t CATEGORY:NAME=count_comm for each): the BCC side of the 10-tracepoint shutdown benchmark.
#define TASK_COMM_LEN 16  /* as libbpf-tools' headers define it; bcc includes no sched.h */

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

int count_comm(void *ctx) {
  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
