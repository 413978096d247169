#!/usr/bin/python3
"""net/send-bytes: bytes sent and sends by process (sock_send_length, ret > 0) — BCC twin of
queries/net/send-bytes.yml for bench/macro."""
from common import comm, per_cpu_sum, run

TEXT = r"""
#define TASK_COMM_LEN 16

struct key_t {
  char comm[TASK_COMM_LEN];
};

struct val_t {
  u64 bytes;
  u64 sends;
};

BPF_PERCPU_HASH(totals, struct key_t, struct val_t, 10240);

TRACEPOINT_PROBE(sock, sock_send_length) {
  int ret = args->ret;
  if (ret <= 0)
    return 0;

  struct key_t key = {};
  struct val_t zero = {}, *val;

  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  val = totals.lookup_or_try_init(&key, &zero);
  if (val) {
    val->bytes += ret;
    val->sends++;
  }
  return 0;
}
"""


def rows(bpf):
    out = []
    for k, v in bpf["totals"].items():
        b, n = per_cpu_sum(v, ("bytes", "sends"))
        out.append((b, f"{comm(k.comm):16} {b:12} {n:10}"))
    return out


run(TEXT, rows, interval=5, title="net/send-bytes")
