#!/usr/bin/python3
"""process/forks: forks by parent name — BCC twin of queries/process/forks.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(sched, sched_process_fork) {
  struct key_t key = {};
  u64 zero = 0, *count;

  /* parent_comm is a __data_loc string on this kernel (6.18) */
  TP_DATA_LOC_READ_STR(&key.comm, parent_comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{comm(k.comm):16} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, title="process/forks")
