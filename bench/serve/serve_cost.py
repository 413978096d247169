#!/usr/bin/env python3
"""What `bpfql serve` costs: idle CPU with every serve-able library query served, and resident
memory over a soak with a new connection (one GET /metrics) every 100 ms. Prints figures; not a
test. Needs root and a built bpfql.

  sudo bench/serve/serve_cost.py [--bpfql build/bpfql] [--cpu-seconds 60] [--soak-seconds 60]
  sudo bench/serve/serve_cost.py --no-stacks       # leave out the stack-keyed queries
  sudo bench/serve/serve_cost.py --soak-only --soak-seconds 600   # the 10-minute soak

The soak opens a new connection every 100 ms (on a fixed schedule: a slow answer does not
stretch the gaps) and samples VmRSS every 10 s; it passes when the last sample is within 5 % of
the first (after a 10 s warm-up).
"""
import argparse, os, re, socket, subprocess, sys, time, glob

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGGREGATE = re.compile(r"\b(count|sum|hist|lhist|percentile|stats|min|max|avg)\(")


STACKS = re.compile(r"\b(kstack|ustack)\b")


def servable_library(no_stacks=False):
    """Library queries that aggregate and need no uprobe/USDT target (serve rejects streaming ones)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "queries", "**", "*.yml"), recursive=True)):
        text = open(path).read()
        select = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        if not AGGREGATE.search(select) or re.search(r"\b(uprobe|uretprobe|usdt|kprobe|kretprobe):", select):
            continue
        if no_stacks and STACKS.search(select):
            continue
        out.append(path)
    return out


def proc_cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def scrape(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                return data
            data += chunk


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(bpfql, files, port, extra=()):
    p = subprocess.Popen([bpfql, "serve", *files, *extra, "--listen", f"127.0.0.1:{port}"],
                         stderr=subprocess.PIPE, text=True)
    err = ""
    deadline = time.time() + 600
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        err += line
        if "Tracing" in line:
            return p, err
    p.kill()
    return None, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpfql", default=os.path.join(ROOT, "build", "bpfql"))
    ap.add_argument("--cpu-seconds", type=float, default=60)
    ap.add_argument("--soak-seconds", type=float, default=60)
    ap.add_argument("--no-stacks", action="store_true", help="leave out queries grouped by kstack/ustack")
    ap.add_argument("--soak-only", action="store_true")
    a = ap.parse_args()
    if a.soak_only:
        soak(a, free_port())
        return

    files = servable_library(a.no_stacks)
    port = free_port()
    p, err = start(a.bpfql, files, port)
    while p is None:  # a query this machine cannot serve: say which, leave it out, try again
        m = re.search(r"(/\S+\.yml)", err)
        bad = next((f for f in files if m and m.group(1).startswith(f)), None)
        q = re.search(r"for query (\S+):", err)  # a load failure names the query, not its file
        if not bad and q:
            bad = next((f for f in files if os.path.basename(f)[:-4] == q.group(1)
                        or re.search(rf"^\s*-?\s*name:\s*{re.escape(q.group(1))}\s*$", open(f).read(), re.M)), None)
        if not bad:
            sys.exit("bpfql serve failed:\n" + err)
        print(f"left out {os.path.relpath(bad, ROOT)}: {err.strip().splitlines()[0]}", file=sys.stderr)
        files.remove(bad)
        p, err = start(a.bpfql, files, port)
    try:
        names = [os.path.relpath(f, os.path.join(ROOT, "queries"))[:-4] for f in files]
        time.sleep(3)
        body = scrape(port)
        print(f"queries served: {len(files)} ({', '.join(names)})")
        lines = body.count(b"\n")
        print(f"exposition: {len(body)} bytes, {lines} lines")

        def cpu_percent(seconds, scrape_every=None):
            c0, t0 = proc_cpu_seconds(p.pid), time.time()
            while time.time() - t0 < seconds:
                if scrape_every:
                    scrape(port)
                time.sleep(scrape_every or seconds)
            c1, t1 = proc_cpu_seconds(p.pid), time.time()
            return 100 * (c1 - c0) / (t1 - t0)

        print(f"CPU, not scraped, over {a.cpu_seconds:.0f} s: {cpu_percent(a.cpu_seconds):.2f} % of a core")
        print(f"CPU, scraped every 15 s, over {a.cpu_seconds:.0f} s: {cpu_percent(a.cpu_seconds, 15):.2f} % of a core")
        print(f"CPU, scraped every 1 s, over {a.cpu_seconds:.0f} s: {cpu_percent(a.cpu_seconds, 1):.2f} % of a core")
        t = time.time()
        p.terminate()
        p.wait(timeout=60)
        print(f"SIGTERM to exit: {time.time() - t:.2f} s")
        p = None
    finally:
        if p and p.poll() is None:
            p.terminate()
            p.wait(timeout=60)
    soak(a, port)


def soak(a, port):
    p = None
    try:
        # The soak: one small query, so that the listener's memory is what is measured.
        small = os.path.join(ROOT, "bench", "soak", "getppid-count.yml")
        p, err = start(a.bpfql, [small], port, ["-p", "pid=1"])
        if p is None:
            sys.exit("bpfql serve failed:\n" + err)
        start_t = time.time()
        n = 0
        rss = []
        next_sample = start_t + 10  # the first sample after a 10 s warm-up
        due = start_t
        while time.time() - start_t < a.soak_seconds + 10:
            scrape(port)
            n += 1
            due += 0.1
            if time.time() >= next_sample:
                rss.append(rss_kib(p.pid))
                next_sample += 10
            time.sleep(max(0.0, due - time.time()))
        rss.append(rss_kib(p.pid))
        first, last = rss[0], rss[-1]
        change = 100 * (last - first) / first
        print(f"soak: {n} connections in {time.time() - start_t:.0f} s; RSS KiB after warm-up {first}, "
              f"end {last}, max {max(rss)} ({change:+.1f} %): {'flat' if abs(change) <= 5 else 'NOT flat'} "
              f"(±5 %); samples {rss}")
    finally:
        if p and p.poll() is None:
            p.terminate()
            p.wait(timeout=60)


if __name__ == "__main__":
    main()
