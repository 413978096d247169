#!/usr/bin/env python3
"""What `bpfql serve` costs: idle CPU with every serve-able library query served, and resident
memory over a soak with a new connection (one GET /metrics) every 100 ms. Prints figures; not a
test. Needs root and a built bpfql.

  sudo bench/serve/serve_cost.py [--bpfql build/bpfql] [--cpu-seconds 60] [--soak-seconds 120]
"""
import argparse, os, re, socket, subprocess, sys, time, glob

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGGREGATE = re.compile(r"\b(count|sum|hist|lhist|percentile|stats|min|max|avg)\(")


def servable_library():
    """Library queries that aggregate and need no uprobe/USDT target (serve rejects streaming ones)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "queries", "**", "*.yml"), recursive=True)):
        text = open(path).read()
        select = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        if not AGGREGATE.search(select) or re.search(r"\b(uprobe|uretprobe|usdt|kprobe|kretprobe):", select):
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


def start(bpfql, files, port):
    p = subprocess.Popen([bpfql, "serve", *files, "--listen", f"127.0.0.1:{port}"],
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
    ap.add_argument("--soak-seconds", type=float, default=120)
    a = ap.parse_args()

    files = servable_library()
    port = free_port()
    p, err = start(a.bpfql, files, port)
    while p is None:  # a query this machine cannot serve: say which, leave it out, try again
        m = re.search(r"(/\S+\.yml)", err)
        bad = next((f for f in files if m and m.group(1).startswith(f)), None)
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

        c0, t0 = proc_cpu_seconds(p.pid), time.time()
        time.sleep(a.cpu_seconds)
        c1, t1 = proc_cpu_seconds(p.pid), time.time()
        print(f"idle CPU over {t1 - t0:.0f} s: {100 * (c1 - c0) / (t1 - t0):.2f} % of a core "
              f"(the machine's own activity is traced too)")

        rss = [rss_kib(p.pid)]
        start_t = time.time()
        n = 0
        next_sample = start_t + 10
        while time.time() - start_t < a.soak_seconds:
            scrape(port)
            n += 1
            time.sleep(0.1)
            if time.time() >= next_sample:
                rss.append(rss_kib(p.pid))
                next_sample += 10
        rss.append(rss_kib(p.pid))
        first, last = rss[0], rss[-1]
        print(f"soak: {n} connections in {a.soak_seconds:.0f} s; RSS KiB start {first}, end {last}, "
              f"max {max(rss)} ({100 * (last - first) / first:+.1f} %); samples {rss}")
    finally:
        p.terminate()
        p.wait(timeout=30)


if __name__ == "__main__":
    main()
