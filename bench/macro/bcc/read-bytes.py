#!/usr/bin/python3
"""syscalls/read-bytes: bytes read, reads and average read size by process — BCC twin of
queries/syscalls/read-bytes.yml for bench/macro (the average is computed in user space)."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

struct val_t {
  u64 bytes;
  u64 reads;
};

BPF_PERCPU_HASH(totals, struct key_t, struct val_t, 10240);

TRACEPOINT_PROBE(syscalls, sys_exit_read) {
  long ret = args->ret;
  if (ret <= 0)
    return 0;

  struct key_t key = {};
  struct val_t zero = {}, *val;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  val = totals.lookup_or_try_init(&key, &zero);
  if (val) {
    val->bytes += ret;
    val->reads++;
  }
  return 0;
}
"""


def rows(bpf):
    out = []
    for k, v in bpf["totals"].items():
        b, n = per_cpu_sum(v, ("bytes", "reads"))
        out.append((b, f"{comm(k.comm):16} {b:12} {n:10} {b // n if n else 0:8}"))
    return out


run(TEXT, rows, interval=5, title="syscalls/read-bytes")
