#!/usr/bin/python3
"""block/io-size: block request sizes by operation (rwbs), a power-of-two histogram; requests
are the histogram's total — BCC twin of queries/block/io-size.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
struct key_t {
  char rwbs[10];
  u16 slot;
};

BPF_PERCPU_HASH(hist, struct key_t, u64, 10240);

TRACEPOINT_PROBE(block, block_rq_issue) {
  struct key_t key = {};
  u64 zero = 0, *count;

  key.slot = bpf_log2l(args->bytes);
  __builtin_memcpy(&key.rwbs, args->rwbs, sizeof(key.rwbs));
  count = hist.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    ops = {}
    for k, v in bpf["hist"].items():
        ops.setdefault(comm(k.rwbs), {})[k.slot] = per_cpu_sum(v)
    return [(sum(b.values()), f"{op:8} {sum(b.values()):10} " +
             " ".join(f"{1 << s}:{b[s]}" for s in sorted(b))) for op, b in ops.items()]


run(TEXT, rows, interval=5, top=100, title="block/io-size")
