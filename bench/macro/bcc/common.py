"""The user-space side every program of the hand-written BCC set shares (bench/macro/bcc/).

Each program compiles its own BCC C text, attaches (TRACEPOINT_PROBE attaches by itself; a
profile program attaches its perf event), says "Tracing" on stderr once attached, then every
`interval` seconds reads its maps the way BCC tools do (iterate the hash, sum the per-CPU
values, sort, print the top rows; nothing cleared: totals since start, as `bpfql serve`'s
counters) and prints them on stdout. On SIGINT/SIGTERM it prints the totals once more and exits.
"""
import signal
import sys
import time

from bcc import BPF, PerfSWConfig, PerfType

def comm(raw):
    return raw.decode("utf-8", "replace")


def per_cpu_sum(values, fields=None):
    """Sum a per-CPU value: an integer, or a struct's `fields` (a tuple of sums)."""
    if fields is None:
        return sum(values)
    return tuple(sum(getattr(v, f) for v in values) for f in fields)


def run(text, rows, interval, top=20, profile_hz=None, title=""):
    """rows(bpf) -> [(sort key, printed line)]; the largest `top` rows are printed."""
    bpf = BPF(text=text)
    if profile_hz:
        bpf.attach_perf_event(ev_type=PerfType.SOFTWARE, ev_config=PerfSWConfig.CPU_CLOCK,
                              fn_name="on_sample", sample_freq=profile_hz)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started ignoring it
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print("Tracing", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(interval)
            show(bpf, rows, top, title)
    except KeyboardInterrupt:
        pass
    show(bpf, rows, top, title)

def show(bpf, rows, top, title):
    out = sorted(rows(bpf), key=lambda r: r[0], reverse=True)[:top]
    print(time.strftime("%H:%M:%S"), title)
    for _, line in out:
        print(line)
    sys.stdout.flush()
