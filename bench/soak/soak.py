#!/usr/bin/env python3
"""Bounded soak: bpfql counts a workload's getppid() calls at full rate for a fixed time
(default 120 s), printing JSON every second. Checks, and prints as one JSON object:
  - RSS and open fds of bpfql at the start (attached, first print) and at the end (flat?);
  - the sum of the per-interval counts equals the workload's own count (nothing missed or
    double counted across interval boundaries and the final print);
  - no record reports dropped keys or lost events.
Needs root. Usage: bench/soak/soak.py [--bpfql build/bpfql] [--seconds 120]
Exit status 0 when every check holds, 1 otherwise.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def build_workload(tmp):
    exe = os.path.join(tmp, "getppid_for")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "getppid_for.c")], check=True)
    return exe


def wait_for_attach(proc, stderr_lines, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if any("Tracing" in line for line in stderr_lines):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpfql", default=os.path.join(ROOT, "build", "bpfql"))
    ap.add_argument("--seconds", type=float, default=120)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root (bpfql loads BPF programs)")

    with tempfile.TemporaryDirectory() as tmp:
        workload = subprocess.Popen([build_workload(tmp), str(args.seconds)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        bpfql = subprocess.Popen(
            [args.bpfql, "run", os.path.join(HERE, "getppid-count.yml"), "-f", "json",
             "-p", f"pid={workload.pid}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        records, stderr_lines = [], []
        readers = [
            threading.Thread(target=lambda: [records.append(json.loads(l)) for l in bpfql.stdout]),
            threading.Thread(target=lambda: [stderr_lines.append(l) for l in bpfql.stderr]),
        ]
        for t in readers:
            t.start()
        if not wait_for_attach(bpfql, stderr_lines):
            bpfql.kill()
            workload.kill()
            sys.exit("soak: bpfql did not attach:\n" + "".join(stderr_lines))

        workload.stdin.write("go\n")
        workload.stdin.flush()
        while not records:  # the first print: everything is set up and has run once
            time.sleep(0.05)
        start = {"rss_kib": rss_kib(bpfql.pid), "fds": open_fds(bpfql.pid)}
        peak = dict(start)
        done = threading.Event()

        def sample():  # the peak between start and end, every second
            while not done.wait(1.0):
                peak["rss_kib"] = max(peak["rss_kib"], rss_kib(bpfql.pid))
                peak["fds"] = max(peak["fds"], open_fds(bpfql.pid))

        sampler = threading.Thread(target=sample)
        sampler.start()
        out, _ = workload.communicate()  # the workload's own count, after SECONDS
        end = {"rss_kib": rss_kib(bpfql.pid), "fds": open_fds(bpfql.pid)}
        done.set()
        sampler.join()
        time.sleep(1.5)  # the interval print after the workload's last calls
        bpfql.send_signal(signal.SIGINT)
        bpfql.wait(timeout=60)
        for t in readers:
            t.join()

    workload_calls = int(out.strip().split("=")[1])
    counted = sum(r["rows"][0]["calls"] for r in records if r.get("rows"))
    dropped = sum(r.get("dropped", 0) for r in records)
    lost = sum(r.get("lost", 0) for r in records)
    report = {
        "seconds": args.seconds,
        "intervals": len(records),
        "workload_calls": workload_calls,
        "calls_per_second": round(workload_calls / args.seconds),
        "bpfql_counted": counted,
        "counts_equal": counted == workload_calls,
        "dropped": dropped,
        "lost": lost,
        "rss_kib": {"start": start["rss_kib"], "end": end["rss_kib"], "peak": peak["rss_kib"]},
        "fds": {"start": start["fds"], "end": end["fds"], "peak": peak["fds"]},
        "bpfql_exit": bpfql.returncode,
        "stderr": [l.rstrip() for l in stderr_lines if "Tracing" not in l],
    }
    ok = (report["counts_equal"] and dropped == 0 and lost == 0 and bpfql.returncode == 0 and
          end["fds"] == start["fds"] and end["rss_kib"] <= start["rss_kib"] * 1.05 + 1024)
    report["ok"] = ok
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
