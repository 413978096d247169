#!/usr/bin/python3
"""process/cpu-profile: on-CPU samples at 49 Hz by process, kernel and user stack — BCC twin of
queries/process/cpu-profile.yml for bench/macro (the profile-bpfcc pattern: a CPU-clock perf
event on every CPU, stack ids in a stack-trace map; kernel frames named in user space, user
frames as addresses since the key holds no pid)."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#include <uapi/linux/bpf_perf_event.h>
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
  s32 kstack;
  s32 ustack;
};

BPF_STACK_TRACE(stacks, 16384);
BPF_PERCPU_HASH(counts, struct key_t, u64, 10240);

int on_sample(struct bpf_perf_event_data *ctx) {
  struct key_t key = {};
  u64 zero = 0, *count;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  key.kstack = stacks.get_stackid(ctx, 0);
  key.ustack = stacks.get_stackid(ctx, BPF_F_USER_STACK);
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""


def frames(bpf, stack_id, kernel):
    if stack_id < 0:
        return "-"
    addrs = bpf["stacks"].walk(stack_id)
    return ";".join(bpf.ksym(a).decode() if kernel else hex(a) for a in addrs)


def rows(bpf):
    return [(n, f"{comm(k.comm)} {frames(bpf, k.kstack, True)} {frames(bpf, k.ustack, False)} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, top=50, profile_hz=49, title="process/cpu-profile")
