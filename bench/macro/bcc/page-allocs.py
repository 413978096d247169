#!/usr/bin/python3
"""mm/page-allocs: pages allocated (1 << order) and allocations by process — BCC twin of
queries/mm/page-allocs.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

struct val_t {
  u64 pages;
  u64 allocations;
};

BPF_PERCPU_HASH(totals, struct key_t, struct val_t, 10240);

TRACEPOINT_PROBE(kmem, mm_page_alloc) {
  struct key_t key = {};
  struct val_t zero = {}, *val;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  val = totals.lookup_or_try_init(&key, &zero);
  if (val) {
    val->pages += 1ULL << args->order;
    val->allocations++;
  }
  return 0;
}
"""


def rows(bpf):
    out = []
    for k, v in bpf["totals"].items():
        p, n = per_cpu_sum(v, ("pages", "allocations"))
        out.append((p, f"{comm(k.comm):16} {p:10} {n:10}"))
    return out


run(TEXT, rows, interval=5, title="mm/page-allocs")
