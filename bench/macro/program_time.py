#!/usr/bin/env python3
"""bench/macro/program_time.py: where the always-on set's cost goes, program by program.

Attaches one tracer set (bpfql serve with the library's aggregating queries, the same queries as
bpftrace scripts, or as hand-written BCC programs: the sets of macro/run.py), turns on the
kernel's BPF run-time statistics (kernel.bpf_stats_enabled) only while the macro workload runs,
and prints each program that ran: its time per workload run, runs, ns per run and instructions
after the verifier (bpftool prog show). The statistics add two clock reads to every program
run, so ns per run is an upper bound; compare programs and sets within one run.

  sudo bench/macro/program_time.py [--set bpfql|bpftrace|bcc] [--runs 3] [--iters 100000]
"""
import argparse, json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as macro  # noqa: E402  (the sets, the workload and the tracers' start and stop)


def programs():
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


def set_stats(on):
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1" if on else "0")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR"))
    ap.add_argument("--set", choices=["bpfql", "bpftrace", "bcc"], default="bpfql")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--port", type=int, default=19436)
    args = ap.parse_args()
    build = macro.find_build(args.build)
    if args.set == "bpfql":
        procs = [macro.start_serve(build, macro.library_files(macro.LIBRARY), args.port,
                                   tempfile.mkdtemp(prefix="bpfql-progtime-"))]
    elif args.set == "bpftrace":
        procs = macro.start_bpftrace(macro.bpftrace_scripts(macro.LIBRARY))
    else:
        procs = macro.start_bcc(macro.LIBRARY)
    try:
        before = programs()
        set_stats(True)
        try:
            seconds = [macro.workload(build, args.procs, args.iters) for _ in range(args.runs)]
        finally:
            set_stats(False)
        after = programs()
    finally:
        macro.stop(procs)
    rows = []
    for pid, p in after.items():
        runs = p.get("run_cnt", 0) - before.get(pid, {}).get("run_cnt", 0)
        ns = p.get("run_time_ns", 0) - before.get(pid, {}).get("run_time_ns", 0)
        if runs > 0:
            rows.append((ns, runs, p.get("name", "?"), p.get("type", "?"), p.get("bytes_xlated", 0) // 8))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"# {args.set}: {len(macro.LIBRARY)} queries, {args.runs} workload runs of "
          f"{args.procs} × {args.iters} rounds ({', '.join(f'{s:.3f}' for s in seconds)} s)\n")
    print(f"Programs' time: {total / 1e6 / args.runs:.1f} ms per workload run, {len(rows)} programs ran.\n")
    print("| program | type | ms per workload run | runs per workload run | ns per run | insns |")
    print("|---|---|---|---|---|---|")
    for ns, runs, name, kind, insns in rows:
        print(f"| {name} | {kind} | {ns / 1e6 / args.runs:.1f} | {runs // args.runs} | {ns / runs:.1f} | {insns} |")


if __name__ == "__main__":
    main()
