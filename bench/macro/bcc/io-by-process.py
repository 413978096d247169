#!/usr/bin/python3
"""block/io-by-process: block requests issued and their bytes by process — BCC twin of
queries/block/io-by-process.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

struct val_t {
  u64 requests;
  u64 bytes;
};

BPF_PERCPU_HASH(totals, struct key_t, struct val_t, 10240);

TRACEPOINT_PROBE(block, block_rq_issue) {
  struct key_t key = {};
  struct val_t zero = {}, *val;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  val = totals.lookup_or_try_init(&key, &zero);
  if (val) {
    val->requests++;
    val->bytes += args->bytes;
  }
  return 0;
}
"""


def rows(bpf):
    out = []
    for k, v in bpf["totals"].items():
        n, b = per_cpu_sum(v, ("requests", "bytes"))
        out.append((b, f"{comm(k.comm):16} {n:10} {b:12}"))
    return out


run(TEXT, rows, interval=5, title="block/io-by-process")
