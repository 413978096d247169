#!/usr/bin/python3
"""syscalls/errors: failed system calls by process, call and errno — BCC twin of
queries/syscalls/errors.yml for bench/macro."""
import errno

from bcc.syscall import syscall_name

from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
  u32 id;
  s32 ret;
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

TRACEPOINT_PROBE(raw_syscalls, sys_exit) {
  long ret = args->ret;
  if (ret >= 0)
    return 0;

  struct key_t key = {};
  u64 zero = 0, *count;

  key.id = args->id;
  key.ret = ret;
  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def rows(bpf):
    return [(n, f"{comm(k.comm):16} {syscall_name(k.id).decode():20} "
                f"{errno.errorcode.get(-k.ret, str(-k.ret)):12} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, top=30, title="syscalls/errors")
