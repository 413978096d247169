#!/usr/bin/python3
"""net/tcp-states: TCP state transitions (inet_sock_set_state, protocol 6) by old and new state
— BCC twin of queries/net/tcp-states.yml for bench/macro (names in user space)."""
from common import per_cpu_sum, run

TEXT = r"""
struct key_t {
  s32 oldstate;
  s32 newstate;
};

BPF_PERCPU_HASH(counts, struct key_t, u64, 1024);

TRACEPOINT_PROBE(sock, inet_sock_set_state) {
  if (args->protocol != 6 /* IPPROTO_TCP */)
    return 0;

  struct key_t key = {};
  u64 zero = 0, *count;

  key.oldstate = args->oldstate;
  key.newstate = args->newstate;
  count = counts.lookup_or_try_init(&key, &zero);
  if (count)
    (*count)++;
  return 0;
}
"""

STATES = ["?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT",
          "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV", "BOUND_INACTIVE"]


def state(n):
    return STATES[n] if 0 < n < len(STATES) else str(n)


def rows(bpf):
    return [(n, f"{state(k.oldstate):14} {state(k.newstate):14} {n}")
            for k, v in bpf["counts"].items() for n in [per_cpu_sum(v)]]


run(TEXT, rows, interval=5, top=100, title="net/tcp-states")
