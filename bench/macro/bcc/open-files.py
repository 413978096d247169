#!/usr/bin/python3
"""syscalls/open-files: openat() calls by process and file name — BCC twin of
queries/syscalls/open-files.yml for bench/macro (64-byte names, bpfql's default strlen)."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16
#define NAME_LEN 64

struct key_t {
  char comm[TASK_COMM_LEN];
  char file[NAME_LEN];
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(syscalls, sys_enter_openat) {
  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  bpf_probe_read_user_str(&key.file, sizeof(key.file), args->filename);
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{comm(k.comm):16} {comm(k.file):40} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, top=30, title="syscalls/open-files")
