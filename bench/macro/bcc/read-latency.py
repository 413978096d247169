#!/usr/bin/python3
"""syscalls/read-latency: read() latency by process (sys_enter_read → sys_exit_read by thread),
count and power-of-two histogram, p50/p99 from it in user space — BCC twin of
queries/syscalls/read-latency.yml for bench/macro (the libbpf-tools latency pattern)."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
  u32 slot;
};

BPF_HASH(start, u32, u64, 10240);
BPF_PERCPU_HASH(hist, struct key_t, u64, 10240);

TRACEPOINT_PROBE(syscalls, sys_enter_read) {
  u32 tid = bpf_get_current_pid_tgid();
  u64 ts = bpf_ktime_get_ns();

  start.update(&tid, &ts);
  return 0;
}

TRACEPOINT_PROBE(syscalls, sys_exit_read) {
  u32 tid = bpf_get_current_pid_tgid();
  u64 *tsp = start.lookup(&tid);

  if (!tsp)
    return 0;
  u64 delta = bpf_ktime_get_ns() - *tsp;
  start.delete(&tid);

  struct key_t key = {};
  u64 zero = 0, *count;

  key.slot = bpf_log2l(delta);
  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  count = hist.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def quantile(buckets, q):
    total, seen = sum(buckets.values()), 0
    for slot in sorted(buckets):
        seen += buckets[slot]
        if seen >= q * total:
            return 1 << slot
    return 0


def rows(bpf):
    by_comm = {}
    for k, v in bpf["hist"].items():
        by_comm.setdefault(comm(k.comm), {})[k.slot] = per_cpu_sum(v)
    out = []
    for name, buckets in by_comm.items():
        n = sum(buckets.values())
        out.append((n, f"{name:16} {n:10} p50 {quantile(buckets, 0.5)} p99 {quantile(buckets, 0.99)}"))
    return out


run(TEXT, rows, interval=5, top=10, title="syscalls/read-latency")
