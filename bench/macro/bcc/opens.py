#!/usr/bin/python3
"""syscalls/opens: openat() calls of one process name ("nginx", the query's default) by file —
BCC twin of queries/syscalls/opens.yml for bench/macro: the name test first, in the kernel."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16
#define NAME_LEN 64

struct key_t {
  char file[NAME_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(syscalls, sys_enter_openat) {
  char name[TASK_COMM_LEN];

  bpf_get_current_comm(&name, sizeof(name));
  if (name[0] != 'n' || name[1] != 'g' || name[2] != 'i' || name[3] != 'n' || name[4] != 'x' ||
      name[5] != 0)
    return 0;

  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_probe_read_user_str(&key.file, sizeof(key.file), args->filename);
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{comm(k.file):40} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, top=30, title="syscalls/opens")
