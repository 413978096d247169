#!/usr/bin/python3
"""hosting/top-users: system calls by user (uid, named in user space) — BCC twin of
queries/hosting/top-users.yml for bench/macro."""
import pwd

from common import per_cpu_sum, run

TEXT = r"""
BPF_PERCPU_HASH(counts, u32, u64, 10240);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
  u32 uid = bpf_get_current_uid_gid();
  u64 zero = 0, *count;

  count = counts.lookup_or_try_init(&uid, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def rows(bpf):
    return [(n, f"{user(k.value):16} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, title="hosting/top-users")
