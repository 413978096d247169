#!/usr/bin/python3
"""net/tcp-retransmits: TCP retransmissions by destination port — BCC twin of
queries/net/tcp-retransmits.yml for bench/macro."""
from common import per_cpu_sum, run

TEXT = r"""
BPF_PERCPU_HASH(counts, u32, u64, 10240);

TRACEPOINT_PROBE(tcp, tcp_retransmit_skb) {
  u32 dport = args->dport;
  u64 zero = 0, *count;

  count = counts.lookup_or_try_init(&dport, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{k.value:6} {n}") for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, title="net/tcp-retransmits")
