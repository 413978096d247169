#!/usr/bin/python3
"""sched/wakeups: wakeups by the name of the task woken — BCC twin of queries/sched/wakeups.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(sched, sched_wakeup) {
  struct key_t key = {};
  u64 zero = 0, *count;

  __builtin_memcpy(&key.comm, args->comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{comm(k.comm):16} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=1, title="sched/wakeups")
