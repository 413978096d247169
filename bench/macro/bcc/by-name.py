#!/usr/bin/python3
"""syscalls/by-name: system calls by number (named in user space) — BCC twin of
queries/syscalls/by-name.yml for bench/macro."""
from bcc.syscall import syscall_name

from common import per_cpu_sum, run

TEXT = r"""
BPF_PERCPU_HASH(counts, u32, u64, 1024);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
  u32 id = args->id;
  u64 zero = 0, *count;

  count = counts.lookup_or_try_init(&id, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{syscall_name(k.value).decode():20} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=1, top=30, title="syscalls/by-name")
