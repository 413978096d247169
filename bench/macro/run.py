#!/usr/bin/env python3
"""bench/macro: the always-on benchmark (bench/README.md, "Always on").

Times a fixed multi-process, syscall-heavy workload (macro_workload) with nothing attached, with
every aggregating library query served at once by `bpfql serve`, and with the same queries as
bpftrace scripts (one bpftrace per query, all at once). Reports throughput lost, the tracers'
CPU and RSS, bpfql's idle CPU (--floor: and the kernel's floor, an empty program on every probe
of the set, and on the probes bpfql attaches), and the cost per event as the number of queries grows: the
library's first 1, 5, 10, all queries served by one bpfql, and N queries on the same tracepoint
(raw_syscalls:sys_enter), fused into one program by one bpfql or run unfused by N bpfqls.

Needs root, a build (BUILD_DIR, default build-bench/ or build/), bpftrace and BCC's Python
module (python3-bpfcc, for /usr/bin/python3). Short by design:
the machine is shared; numbers from a loaded machine are noisy, and it says so.
"""
import argparse, json, os, signal, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The library's aggregating queries (streaming ones and USDT-only ones left out), in the order
# the curve adds them.
LIBRARY = ["syscalls/top", "syscalls/by-name", "hosting/top-users", "syscalls/errors",
           "syscalls/read-bytes", "sched/switches", "sched/wakeups", "process/forks",
           "syscalls/open-files", "syscalls/read-latency", "syscalls/opens", "mm/page-faults",
           "mm/page-allocs", "process/signals", "net/send-bytes", "net/tcp-states",
           "net/tcp-retransmits", "block/io-by-process", "block/io-size", "process/cpu-profile"]


# The two floors (--floor): empty programs on every probe the queries name, and on those bpfql
# attaches (without the syscalls:* events, whose bodies run in its raw_syscalls programs).
FLOOR_NAMED = "floor: empty programs on every probe the queries name"
FLOOR_BPFQL = "floor: empty programs on the probes bpfql attaches"

# BCC's Python module comes with the distribution's python3 (python3-bpfcc), not a pyenv one.
BCC_PYTHON = os.environ.get("BCC_PYTHON", "/usr/bin/python3")


def find_build(arg):
    for d in ([arg] if arg else [os.path.join(ROOT, "build-bench"), os.path.join(ROOT, "build")]):
        if d and os.path.exists(os.path.join(d, "bpfql")):
            return d
    sys.exit("no build with bpfql found (BUILD_DIR)")


def cpu_ns(pid):
    """CPU time of a process, all its threads, in ns (schedstat)."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
    except OSError:
        pass
    return total


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def workload(build, procs, iters):
    out = subprocess.run([os.path.join(build, "bench", "bench_macro_workload"), str(procs), str(iters)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["seconds"]


def timed(build, args, pids):
    """Median workload seconds over the rounds, and the tracers' CPU (ns) over all of them."""
    before = sum(cpu_ns(p) for p in pids)
    times = sorted(workload(build, args.procs, args.iters) for _ in range(args.rounds))
    cpu = sum(cpu_ns(p) for p in pids) - before
    return times[len(times) // 2], cpu, sum(times)


def wait_metrics(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("bpfql serve exited: " + proc.stderr.read())
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            # Up once every query's probes are attached (bpfql_query_up; bpfql_up is gone).
            ups = [l for l in body.splitlines() if l.startswith("bpfql_query_up{")]
            if ups and all(l.endswith(" 1") for l in ups):
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise RuntimeError("bpfql serve did not come up")


def start_serve(build, queries, port, cache):
    env = dict(os.environ, BPFQL_CACHE_DIR=cache)
    # serve's defaults, as an exporter runs: the maps are read when a scrape finds the last read
    # older than 0.5 s (and every 5 minutes), not on a timer of bpfql's own.
    p = subprocess.Popen([os.path.join(build, "bpfql"), "serve", "--listen", f"127.0.0.1:{port}"] + queries,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wait_metrics(port, p)
    return p


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def attached(pid):
    """Whether process `pid` holds a perf event or a BPF link (a program attached)."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target in ("anon_inode:[perf_event]", "anon_inode:bpf_link"):
                return True
    except OSError:
        pass
    return False


def library_files(names):
    """The query files of library names ("syscalls/top" → queries/syscalls/top.yml)."""
    return [os.path.join(ROOT, "queries", n + ".yml") for n in names]


def bpftrace_scripts(names):
    """The bpftrace twins of library names (bench/macro/bpftrace/top.bt for "syscalls/top")."""
    return [os.path.join(HERE, "bpftrace", n.split("/")[1] + ".bt") for n in names]


def start_bpftrace(scripts, timeout=180):
    procs = []
    for script in scripts:
        # Its stdout is a pipe, so bpftrace buffers "Attaching..." until it exits: the kernel
        # says when it attached instead. Output (the maps at exit) is not read.
        procs.append(subprocess.Popen(["bpftrace", script], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    deadline = time.time() + timeout
    while not all(attached(p.pid) for p in procs):
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.time() > deadline:
            stop(procs)
            raise RuntimeError(f"bpftrace: {len(dead)} exited, or not attached in time")
        time.sleep(0.5)
    time.sleep(2)  # the last probes of each
    return procs


def start_bcc(names, timeout=300):
    """One hand-written BCC program per query (bench/macro/bcc/NAME.py), all at once; each
    says "Tracing" on stderr once attached. Their stdout (the maps printed at each query's
    interval) is discarded, as bpfql's and bpftrace's output is."""
    procs = []
    for n in names:
        script = os.path.join(HERE, "bcc", n.split("/")[1] + ".py")
        procs.append(subprocess.Popen([BCC_PYTHON, script], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    deadline = time.time() + timeout
    for p in procs:
        while True:
            if time.time() > deadline:
                stop(procs)
                raise RuntimeError("bcc: not attached in time")
            line = p.stderr.readline()
            if not line:
                stop(procs)
                raise RuntimeError(f"bcc: {p.args[1]} exited before attaching")
            if line.startswith("Tracing"):
                break
    return procs


def same_probe_queries(n, directory):
    files = []
    for k in range(n):
        path = os.path.join(directory, f"same{k}.yml")
        with open(path, "w") as f:
            f.write(f"name: same{k}\nprobe: tracepoint:raw_syscalls:sys_enter\n"
                    f"where: uid != {100000 + k}\nselect: count() as calls\ngroup_by: comm\n")
        files.append(path)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR"))
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, default=19435)
    ap.add_argument("--counts", default="1,5,10,20")
    ap.add_argument("--no-bpftrace", action="store_true")
    ap.add_argument("--no-bcc", action="store_true")
    ap.add_argument("--no-curve", action="store_true", help="only the three side-by-side modes")
    ap.add_argument("--floor", action="store_true",
                    help="also time the workload with an empty program on every probe of the set (floor.bt), "
                         "and on the probes bpfql attaches (floor.bt without syscalls:*)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "macro.md"))
    args = ap.parse_args()
    build = find_build(args.build)
    cache = tempfile.mkdtemp(prefix="bpfql-macro-cache-")
    queries = library_files(LIBRARY)
    rounds_total = args.procs * args.iters
    with open("/proc/loadavg") as f:
        load_start = f.read().split()[:3]
    rows = {}

    # Each mode is measured against the workload with nothing attached just before it and just
    # after it (the mean of the two): on a shared VM the bare workload drifts by a quarter within
    # minutes, and one baseline for the whole run moves every ratio with it.
    nones = []

    def bare():
        # The first workload run after a pause is slower (here 0.67 s against 0.56-0.59 after
        # it): one run first, not counted.
        workload(build, args.procs, args.iters)
        s, _, _ = timed(build, args, [])
        nones.append(s)
        return s

    def bracketed(label, measure):
        before = bare()
        measure()
        rows[label]["none_s"] = (before + bare()) / 2

    none = bare()
    rows["none"] = {"s": none}

    def served(files, label, port):
        p = start_serve(build, files, port, cache)
        try:
            rss = rss_kb(p.pid)
            s, cpu, wall = timed(build, args, [p.pid])
            # The first scrape after the workload, on its own: it reads every key the workload
            # made and does the one-time work of a first read (a query grouped by kstack loads
            # /proc/kallsyms, ~100 ms of CPU here), which a Prometheus scraping all along would
            # have spread over the scrapes during the workload.
            first0 = cpu_ns(p.pid)
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            first_ms = (cpu_ns(p.pid) - first0) / 1e6
            # Idle: no workload, scraped every 15 s (a common Prometheus scrape_interval), over
            # two scrape intervals that each end with a scrape.
            idle0 = cpu_ns(p.pid)
            for _ in range(2):
                time.sleep(15)
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            idle = (cpu_ns(p.pid) - idle0) / 30e9 * 100
            rows[label] = {"s": s, "cpu_pct": cpu / (wall * 1e9) * 100, "rss_mb": max(rss, rss_kb(p.pid)) / 1024,
                           "idle_pct": idle, "first_scrape_ms": first_ms, "queries": len(files)}
        finally:
            stop([p])

    bracketed("bpfql serve (all)", lambda: served(queries, "bpfql serve (all)", args.port))
    if args.floor:
        # What tracing these events costs the kernel at all, whatever the programs do: on every
        # probe the queries name (what the BCC set and bpftrace attach), and on those bpfql
        # attaches (its syscalls:* bodies run in its raw_syscalls programs: compiler/codegen/README.md).
        with tempfile.TemporaryDirectory() as d:
            own = os.path.join(d, "floor-bpfql.bt")
            with open(os.path.join(HERE, "floor.bt")) as f, open(own, "w") as out:
                out.writelines(l for l in f if not l.startswith("tracepoint:syscalls:"))
            def floor_of(label, script):
                procs = start_bpftrace([script])
                try:
                    s, _, _ = timed(build, args, [])
                    rows[label] = {"s": s, "queries": 0}
                finally:
                    stop(procs)

            for label, script in ((FLOOR_NAMED, os.path.join(HERE, "floor.bt")), (FLOOR_BPFQL, own)):
                bracketed(label, lambda: floor_of(label, script))

    def traced_by(label, procs):
        try:
            pids = [p.pid for p in procs]
            rss = sum(rss_kb(p) for p in pids)
            s, cpu, wall = timed(build, args, pids)
            rows[label] = {"s": s, "cpu_pct": cpu / (wall * 1e9) * 100,
                           "rss_mb": max(rss, sum(rss_kb(p) for p in pids)) / 1024,
                           "queries": len(LIBRARY)}
        finally:
            stop(procs)

    if not args.no_bpftrace:
        bracketed("bpftrace (all, one per query)",
                  lambda: traced_by("bpftrace (all, one per query)",
                                    start_bpftrace(bpftrace_scripts(LIBRARY))))
    if not args.no_bcc:
        bracketed("hand-written BCC (all, one per query)",
                  lambda: traced_by("hand-written BCC (all, one per query)", start_bcc(LIBRARY)))
    none = sum(nones) / len(nones)
    rows["none"] = {"s": none}

    curve = []
    for n in ([] if args.no_curve else [int(c) for c in args.counts.split(",")] + [len(LIBRARY)]):
        if n > len(LIBRARY) or (curve and curve[-1]["n"] == n):
            continue
        p = start_serve(build, queries[:n], args.port + 1 + n, cache)
        try:
            s, _, _ = timed(build, args, [p.pid])
        finally:
            stop([p])
        curve.append({"n": n, "s": s, "ns_per_round": (s - none) / rounds_total * 1e9})

    same = []
    with tempfile.TemporaryDirectory() as d:
        for n in ([] if args.no_curve else [int(c) for c in args.counts.split(",")]):
            files = same_probe_queries(n, d)
            p = start_serve(build, files, args.port + 100 + n, cache)
            try:
                fused, _, _ = timed(build, args, [p.pid])
            finally:
                stop([p])
            ps = [start_serve(build, [f], args.port + 200 + k, cache) for k, f in enumerate(files)]
            try:
                unfused, _, _ = timed(build, args, [p.pid for p in ps])
            finally:
                stop(ps)
            same.append({"n": n, "fused_ns": (fused - none) / rounds_total * 1e9,
                         "unfused_ns": (unfused - none) / rounds_total * 1e9})

    with open("/proc/loadavg") as f:
        load_end = f.read().split()[:3]
    md = [f"# Always-on macro benchmark — {time.strftime('%Y-%m-%dT%H:%M:%S')}", "",
          f"{args.procs} processes × {args.iters} rounds (macro_workload), median of {args.rounds}. "
          f"Load average {' '.join(load_start)} at the start, {' '.join(load_end)} at the end: "
          "a shared, loaded 2-vCPU machine — compare modes within this run only. Each mode's loss "
          "is against the bare workload timed just before and just after it (the mean of the two; "
          "the none row: the mean of every bare run).", "",
          "| mode | queries | workload s | bare workload around it, s | throughput lost | time added | tracer CPU (% of a core, while loaded) | RSS MB | first scrape after the workload, CPU ms | idle CPU % (scraped every 15 s, after it) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    # Throughput lost (1 - none/with) is the target's measure; it saturates towards 100 % as the
    # tracing grows costlier than the work, so the time each tracer adds (with/none - 1) is shown
    # beside it: the same runs, the cost in the kernel without that compression.
    lost = {k: 1 - r["none_s"] / r["s"] for k, r in rows.items() if k != "none"}
    added = {k: r["s"] / r["none_s"] - 1 for k, r in rows.items() if k != "none"}
    for label, r in rows.items():
        lost_cell = f"{lost[label] * 100:.1f} %" if label in lost else "—"
        added_cell = f"{added[label] * 100:.1f} %" if label in added else "—"
        idle = f"{r['idle_pct']:.2f}" if "idle_pct" in r else "—"
        first = f"{r['first_scrape_ms']:.0f}" if "first_scrape_ms" in r else "—"
        around = f"{r['none_s']:.3f}" if "none_s" in r else "—"
        md.append(f"| {label} | {r.get('queries', 0)} | {r['s']:.3f} | {around} | {lost_cell} | {added_cell} | "
                  f"{r.get('cpu_pct', 0):.1f} | {r.get('rss_mb', 0):.0f} | {first} | {idle} |")
    ours = lost.get("bpfql serve (all)")
    for label in ("bpftrace (all, one per query)", "hand-written BCC (all, one per query)"):
        if ours is not None and lost.get(label):
            md.append(f"\nbpfql's loss / {label.split(' (')[0]}'s: {ours / lost[label]:.2f}× "
                      f"(time added: {added['bpfql serve (all)'] / added[label]:.2f}×)")
    bpftrace = lost.get("bpftrace (all, one per query)")
    for label, what in ((FLOOR_NAMED, "every probe the queries name"),
                        (FLOOR_BPFQL, "the probes bpfql attaches")):
        floor = lost.get(label)
        if floor is not None and ours and bpftrace:
            md.append(f"\nThe floor on {what} (no tool's work, only the kernel's cost of running a "
                      f"program on every event there) loses {floor * 100:.1f} %: {floor / ours:.2f}× "
                      f"bpfql's loss and {floor / bpftrace:.2f}× bpftrace's.")
    md += ["", "Cost per workload round (≈ 8 system calls, and a share of the switches, opens and execs) "
           "added by one `bpfql serve` with the library's first N queries:", "",
           "| queries | ns per round added |", "|---|---|"]
    md += [f"| {c['n']} | {c['ns_per_round']:.0f} |" for c in curve]
    md += ["", "N queries on the same tracepoint (raw_syscalls:sys_enter, count by comm, each its own "
           "filter): one bpfql (fused: one program) vs N bpfqls (N programs):", "",
           "| N | fused ns/round | unfused ns/round |", "|---|---|---|"]
    md += [f"| {s['n']} | {s['fused_ns']:.0f} | {s['unfused_ns']:.0f} |" for s in same]
    text = "\n".join(md) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"rows": rows, "bare": nones, "curve": curve, "same_probe": same}, f, indent=1)


if __name__ == "__main__":
    main()
