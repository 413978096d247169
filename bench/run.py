#!/usr/bin/env python3
"""bpfql benchmarks: overhead per event against real baselines, startup, shutdown, memory, CPU
and map reads. Prints a markdown report and writes it to bench/results/latest.md (raw numbers in
latest.json). Python standard library only. Run as root. See bench/README.md.

    bench/run.py [--build-dir DIR] [--rounds 5] [--calls 2000000] [--quick] [--queries a,b]
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
WORKLOAD_COMM = "bench_workload"
MODES = ["none", "floor", "rawfloor", "bcc", "bpftrace", "bpfql"]
MODE_TITLES = {"none": "none", "floor": "floor", "rawfloor": "raw floor", "bcc": "BCC",
               "bpftrace": "bpftrace", "bpfql": "bpfql"}
TARGETS = {"vs_bcc": 1.10, "vs_bpftrace": 0.60, "start_ratio": 1.0, "sigint_10tp_ms": 150.0,
           "map_100k_ms": 60.0, "cpu_pct": 0.5}


# --------------------------------------------------------------------------------------------
# What is measured
# --------------------------------------------------------------------------------------------

@dataclass
class Query:
    """One benchmark query: the same job as bench/queries/ID.yml, bench/bpftrace/ID.bt and
    bench/baselines/ID.c, on `tracepoints`, driven by one workload."""
    id: str
    title: str
    tracepoints: list
    workload: str          # getppid | read | openat
    key: str = ""          # where the workload's number is: "comm", "pid", or "" (the total)
    absent: bool = False   # the filter rejects the workload: its key must not appear
    calls_div: int = 1     # calls = N / calls_div (a failing openat is ~7x dearer than getppid)
    # bpfql attaches it as raw tracepoints (its program reads no field of the record): the
    # "raw floor", an empty raw tracepoint program, is measured too.
    raw: bool = False


QUERIES = [
    Query("count_by_comm", "count by comm", ["raw_syscalls:sys_enter"], "getppid", key="comm",
          raw=True),
    Query("count_by_pid", "count by pid", ["raw_syscalls:sys_enter"], "getppid", key="pid",
          raw=True),
    Query("filter_pid_count_by_comm", "pid == 1, count by comm", ["raw_syscalls:sys_enter"],
          "getppid", key="comm", absent=True, raw=True),
    Query("sum_by_comm", "sum(retval) by comm", ["syscalls:sys_exit_read"], "read", key="comm",
          calls_div=2),
    Query("hist_field", "hist(args.count)", ["syscalls:sys_enter_read"], "read", calls_div=2),
    Query("span_read_latency", "span read, hist(duration)",
          ["syscalls:sys_enter_read", "syscalls:sys_exit_read"], "read", calls_div=2),
    Query("openat_filter", 'openat filename == path', ["syscalls:sys_enter_openat"],
          "openat", calls_div=5),
]
READ_SIZE = 64            # reads cycle through 1..READ_SIZE bytes
# Opened by the openat workload and matched by the filter. Missing on purpose: ENOENT allocates
# no struct file, so a call costs ~1 µs, steadily (opening /dev/null varied by ±40%).
OPEN_PATH = "/bpfql-bench-missing"
TEN_TRACEPOINTS = [
    "syscalls:sys_enter_read", "syscalls:sys_enter_write", "syscalls:sys_enter_openat",
    "syscalls:sys_enter_close", "syscalls:sys_enter_lseek", "syscalls:sys_enter_mmap",
    "syscalls:sys_enter_getppid", "syscalls:sys_enter_futex", "syscalls:sys_enter_nanosleep",
    "syscalls:sys_enter_clock_nanosleep",
]


@dataclass
class Config:
    bpfql: str
    workload: str
    baseline: str
    bpftrace: str
    rounds: int
    calls: int
    cpu: int
    fifo: int
    tracer_fifo: int
    resolution: float
    settle: float
    patience: float
    map_keys: int
    idle_seconds: float
    queries: list
    modes: list
    extras: bool
    overhead: bool
    out: str
    xlated_dir: str
    insns_only: bool = False   # --insns-only: attach, list the instructions, no timing
    cache_root: str = ""   # BPFQL_CACHE_DIR of every bpfql run: warm/ (primed), cold-N/ (empty)


# --------------------------------------------------------------------------------------------
# Processes: attach detection, reaping, /proc figures
# --------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_BPF = 321 if platform.machine() == "x86_64" else 280   # aarch64: 280
_BPF_TASK_FD_QUERY = 20
_PR_SET_CHILD_SUBREAPER = 36


class _TaskFdQuery(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint32), ("fd", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("buf_len", ctypes.c_uint32), ("buf", ctypes.c_uint64),
                ("prog_id", ctypes.c_uint32), ("fd_type", ctypes.c_uint32),
                ("probe_offset", ctypes.c_uint64), ("probe_addr", ctypes.c_uint64)]


def attached_programs(pid):
    """(fd, prog_id, probe name) for each of PID's perf-event or link fds that has a BPF
    program attached, asked of the kernel (BPF_TASK_FD_QUERY). The same test for every tool:
    a tracer is tracing once the kernel says its programs are attached."""
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link not in ("anon_inode:[perf_event]", "anon_inode:bpf_link"):
            continue
        buf = ctypes.create_string_buffer(256)
        query = _TaskFdQuery(pid=pid, fd=int(fd), buf_len=256, buf=ctypes.addressof(buf))
        rc = _libc.syscall(ctypes.c_long(_SYS_BPF), ctypes.c_long(_BPF_TASK_FD_QUERY),
                           ctypes.byref(query), ctypes.c_long(ctypes.sizeof(query)))
        if rc == 0:
            found.append((int(fd), query.prog_id, buf.value.decode(errors="replace")))
    return found


def foreign_tracers(mine):
    """Programs other processes (not in `mine`) have attached to system-call tracepoints: another
    tracer on the machine adds its cost to every mode and must not be mistaken for ours."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        names = sorted({name for _, _, name in attached_programs(int(entry))
                        if name.startswith(("sys_enter", "sys_exit"))})
        if names:
            try:
                with open(f"/proc/{entry}/comm") as comm:
                    who = comm.read().strip()
            except OSError:
                who = "?"
            found.append(f"{who}[{entry}]: {','.join(names)}")
    return found


def wait_for_quiet(mine, patience):
    """Waits up to `patience` s for other tracers to go; returns those still there."""
    deadline = time.monotonic() + patience
    while True:
        others = foreign_tracers(mine)
        if not others or time.monotonic() >= deadline:
            return others
        time.sleep(0.5)


class ForeignWatch:
    """Polls for other processes' syscall tracers while a measurement runs (on our CPU, not the
    workload's): one that comes and goes mid-run must not pass unnoticed."""

    def __init__(self, mine, period=0.1):
        self.mine, self.period, self.seen = mine, period, set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self.done.is_set():
            self.seen.update(foreign_tracers(self.mine))
            self.done.wait(self.period)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.done.set()
        self.thread.join()
        self.seen.update(foreign_tracers(self.mine))


def become_subreaper():
    """Orphans of our tracers (bpfql's detach holder) become our children, so we can wait for
    them: a tracer is only gone when its probes are."""
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def orphans():
    """Our children that we did not start (re-parented to us as the subreaper)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def wait_exit(pid, timeout):
    """Polls for PID's exit (1 ms steps) and reaps it. Returns (monotonic exit time, rusage) or
    (None, None) on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            return time.monotonic(), None
        if done == pid:
            return time.monotonic(), usage
        time.sleep(0.001)
    return None, None


def proc_status_kb(pid, field_name):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_cpu_ns(pid):
    """CPU time of all of PID's threads, in ns (schedstat: exact, not clock ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total


class TracerFailed(Exception):
    pass


class Tracer:
    """A tracing process (bpfql, bpftrace, the BCC runner): started, waited for until the
    kernel reports `probes` programs attached and `ready` appears on its output, stopped with
    SIGINT. Records the times of each step."""

    def __init__(self, label, argv, ready, probes, env=None):
        self.label, self.argv, self.ready, self.probes = label, argv, re.compile(ready), probes
        self.env = env
        self.out, self.err = [], []
        self.t_line = self.t_attached = self.t_exit = self.t_detached = None
        self.rusage = None
        self.returncode = None
        self.sigints_lost = 0

    def start(self, fifo=0):
        argv = (["chrt", "-f", str(fifo)] if fifo > 0 else []) + self.argv
        self.t_spawn = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=BENCH,
                                     env=dict(os.environ, **self.env) if self.env else None)
        self.pid = self.proc.pid
        self.readers = [threading.Thread(target=self._read, args=(s, b), daemon=True)
                        for s, b in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, lines):
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if self.t_line is None and self.ready.search(line):
                self.t_line = time.monotonic()

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.t_attached is None and len(attached_programs(self.pid)) >= self.probes:
                self.t_attached = time.monotonic()
            if self.t_attached is not None and self.t_line is not None:
                return
            done, status, usage = os.wait4(self.pid, os.WNOHANG)
            if done == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                self._join()
                raise TracerFailed(f"{self.label} exited ({self.returncode}) before tracing:\n"
                                   + "\n".join(self.err[-15:]))
            time.sleep(0.005)
        self.kill()
        raise TracerFailed(f"{self.label}: not attached after {timeout:.0f}s "
                           f"(attached {len(attached_programs(self.pid))}/{self.probes})")

    def programs(self):
        return attached_programs(self.pid)

    def stop(self, timeout=30.0):
        """SIGINT; waits for the process, then for any orphan it left (bpfql's detach holder)."""
        self.t_sigint = time.monotonic()
        os.kill(self.pid, signal.SIGINT)
        self.t_exit, self.rusage = wait_exit(self.pid, 3.0)
        # bpftrace 0.17 on a loaded machine sometimes loses a SIGINT (it arrives while its
        # loop is outside epoll_wait): send it again, as a user would, and count it.
        while self.t_exit is None and time.monotonic() - self.t_sigint < timeout:
            self.sigints_lost += 1
            os.kill(self.pid, signal.SIGINT)
            self.t_exit, self.rusage = wait_exit(self.pid, 3.0)
        if self.t_exit is None:
            where = self.where()
            self.kill()
            raise TracerFailed(f"{self.label}: still running {timeout:.0f}s after SIGINT "
                               f"({where}); last output: " + " | ".join(self.err[-3:]))
        self._join()
        self.t_detached = self.t_exit
        for orphan in orphans():
            t_gone, _ = wait_exit(orphan, timeout)
            if t_gone is not None:
                self.t_detached = max(self.t_detached, t_gone)

    def where(self):
        """What a stuck tracer's threads wait on (wchan), for the report."""
        waits = []
        try:
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{task}/wchan") as wchan:
                    waits.append(wchan.read().strip() or "running")
        except OSError:
            pass
        return "threads in " + ", ".join(sorted(set(waits))) if waits else "gone"

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        for orphan in orphans():
            try:
                os.kill(orphan, signal.SIGKILL)
                os.waitpid(orphan, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def _join(self):
        for reader in self.readers:
            reader.join(timeout=5)
        self.proc.returncode = self.returncode  # reaped by us, not by Popen

    def ms(self, a, b):
        return None if a is None or b is None else (b - a) * 1000.0


# --------------------------------------------------------------------------------------------
# The tools, as commands
# --------------------------------------------------------------------------------------------

def floor_tracer(cfg, tracepoints, raw=False):
    argv = [cfg.baseline, "baselines/floor.c", "--dump", "0"]
    for tp in tracepoints:
        argv += ["-r", f"{tp.split(':')[1]}=floor"] if raw else ["-t", f"{tp}=floor"]
    return Tracer("floor", argv, r"^Tracing", len(tracepoints))


def bcc_tracer(cfg, name, tracepoints, function=None, dump=100):
    argv = [cfg.baseline, f"baselines/{name}.c", "--dump", str(dump)]
    for tp in tracepoints if function else []:
        argv += ["-t", f"{tp}={function}"]
    return Tracer("BCC", argv, r"^Tracing", len(tracepoints))


def bpftrace_tracer(cfg, name, tracepoints):
    # "Attaching N probes..." comes before the attach; the attach check does the rest.
    return Tracer("bpftrace", [cfg.bpftrace, f"bpftrace/{name}.bt"], r"^Attaching \d+ probe",
                  len(tracepoints))


def bpfql_cache_env(cfg, cache):
    """bpfql's program cache (runtime/compile/program_cache.h): "warm" shares one directory that
    prime_bpfql_cache filled; "cold" gets a new empty one, so the run compiles the program."""
    if cache == "warm":
        return {"BPFQL_CACHE_DIR": os.path.join(cfg.cache_root, "warm")}
    return {"BPFQL_CACHE_DIR": tempfile.mkdtemp(prefix="cold-", dir=cfg.cache_root)}


def bpfql_tracer(cfg, name, tracepoints, fmt="json", cache="warm"):
    return Tracer("bpfql", [cfg.bpfql, "run", "-f", fmt, f"queries/{name}.yml"], r"^Tracing",
                  len(tracepoints), env=bpfql_cache_env(cfg, cache))


def prime_bpfql_cache(cfg, names):
    """Runs each query once (stop_after 100 ms) so that the warm cache has its program."""
    for name in names:
        subprocess.run([cfg.bpfql, "run", "-f", "json", "--stop-after", "100ms",
                        f"queries/{name}.yml"], cwd=BENCH, capture_output=True, timeout=120,
                       env=dict(os.environ, **bpfql_cache_env(cfg, "warm")))


def mode_tracer(cfg, query, mode):
    if mode == "floor":
        return floor_tracer(cfg, query.tracepoints)
    if mode == "rawfloor":
        return floor_tracer(cfg, query.tracepoints, raw=True)
    if mode == "bcc":
        return bcc_tracer(cfg, query.id, query.tracepoints)
    if mode == "bpftrace":
        return bpftrace_tracer(cfg, query.id, query.tracepoints)
    if mode == "bpfql":
        return bpfql_tracer(cfg, query.id, query.tracepoints)
    return None


@dataclass
class WorkloadRun:
    ns_per_call: float
    pid: int
    calls: int


def run_workload(cfg, mode, calls, *extra):
    argv = [cfg.workload, "--cpu", str(cfg.cpu), "--fifo", str(cfg.fifo), mode, str(calls),
            *map(str, extra)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise TracerFailed(f"workload failed: {done.stderr.strip()}")
    fields = dict(item.split("=", 1) for item in done.stdout.split())
    return WorkloadRun(float(fields["ns_per_call"]), int(fields["pid"]), calls)


def workload_args(query, calls):
    if query.workload == "read":
        return (calls, READ_SIZE)
    if query.workload == "openat":
        return (calls, OPEN_PATH)
    return (calls,)


# --------------------------------------------------------------------------------------------
# Did the tracer see the workload? (a tracer that traces nothing would look free)
# --------------------------------------------------------------------------------------------

_BUCKET = re.compile(r"^\[[^\]\)]*[\]\)]\s+(\d+)\s*\|")


def _from_bcc(query, lines, token):
    rows = [line.strip().split("\t") for line in lines if line.startswith("  ")]
    if not query.key:
        return sum(int(row[1]) for row in rows) if rows else None
    return next((int(row[1]) for row in rows if row[0] == token), None)


def _from_bpftrace(query, lines, token):
    if not query.key:
        buckets = [int(m.group(1)) for m in map(_BUCKET.match, lines) if m]
        if buckets:
            return sum(buckets)
        scalar = [re.match(r"^@: (\d+)$", line) for line in lines]
        return next((int(m.group(1)) for m in scalar if m), None)
    pattern = re.compile(r"^@\[" + re.escape(token) + r"\]: (-?\d+)$")
    return next((int(m.group(1)) for m in map(pattern.match, lines) if m), None)


def _json_rows(lines):
    rows = None
    for line in lines:
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "rows" in record:
                rows = record["rows"]
    return rows


def _cell_total(value):
    if isinstance(value, list):   # hist: [{"min":..,"max":..,"count":..}]
        return sum(int(b.get("count", 0)) for b in value if isinstance(b, dict))
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _from_bpfql(query, lines, token):
    rows = _json_rows(lines)
    if rows is None:
        return None
    if not query.key:
        totals = [t for row in rows for t in map(_cell_total, row.values()) if t is not None]
        return sum(totals) if totals else 0
    for row in rows:
        if any(str(v) == token for v in row.values()):
            return next((v for v in map(_cell_total, row.values())
                         if v is not None and str(v) != token), None)
    return None


def verify(query, mode, tracer, wl):
    """None when the tracer's output shows the workload's events, else what is wrong."""
    if mode in ("none", "floor", "rawfloor"):
        return None
    token = str(wl.pid) if query.key == "pid" else WORKLOAD_COMM
    parse = {"bcc": _from_bcc, "bpftrace": _from_bpftrace, "bpfql": _from_bpfql}[mode]
    seen = parse(query, tracer.out, token)
    if query.absent:
        return None if not seen else f"filtered-out key {token} present ({seen})"
    if seen is None:
        return f"no value for {token or 'the total'} in its output"
    if seen < wl.calls:
        return f"saw {seen} < {wl.calls} events"
    return None


# --------------------------------------------------------------------------------------------
# Overhead: rounds of none, floor, BCC, bpftrace, bpfql on the same workload
# --------------------------------------------------------------------------------------------

def xlated(cfg, tracer, tag):
    """Instruction counts (after the verifier's rewrites) of the tracer's attached programs;
    their listings go to results/xlated/ for reading."""
    counts = {}
    for _, prog_id, _ in tracer.programs():
        if prog_id in counts:
            continue
        show = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                              capture_output=True, text=True)
        try:
            info = json.loads(show.stdout)
        except ValueError:
            continue
        counts[prog_id] = (info.get("name", "?"), int(info.get("bytes_xlated", 0)) // 8)
        dump = subprocess.run(["bpftool", "prog", "dump", "xlated", "id", str(prog_id)],
                              capture_output=True, text=True)
        os.makedirs(cfg.xlated_dir, exist_ok=True)
        path = os.path.join(cfg.xlated_dir, f"{tag}.{counts[prog_id][0]}.txt")
        with open(path, "w") as listing:
            listing.write(dump.stdout)
    return sorted(counts.values())


def measure_mode(cfg, query, mode, calls, first_round):
    """One measurement: start the tracer, run the workload, stop. Returns a dict."""
    result = {"mode": mode}
    tracer = mode_tracer(cfg, query, mode)
    if tracer:
        tracer.start(cfg.tracer_fifo)
        try:
            tracer.wait_ready(timeout=180)
        except TracerFailed as failure:
            return {"mode": mode, "error": str(failure)}
        time.sleep(cfg.settle)
    mine = {tracer.pid} if tracer else set()
    others = wait_for_quiet(mine, cfg.patience)
    wl = None
    try:
        with ForeignWatch(mine) as watch:
            wl = run_workload(cfg, query.workload, *workload_args(query, calls))
        result["ns"] = wl.ns_per_call
        others = set(others) | watch.seen
        if others:
            result["foreign"] = "other tracers attached: " + "; ".join(sorted(others))
        if tracer and first_round and mode not in ("floor", "rawfloor"):
            result["insns"] = xlated(cfg, tracer, f"{query.id}.{mode}")
    except TracerFailed as failure:
        result["error"] = str(failure)
    finally:
        if tracer:
            try:
                tracer.stop()
            except TracerFailed as failure:   # the figure stands: it was attached throughout
                result["error"] = str(failure)
    if tracer and tracer.sigints_lost:
        result["error"] = f"{tracer.label} needed {tracer.sigints_lost + 1} SIGINTs to exit"
    if tracer and wl:
        result["problem"] = verify(query, mode, tracer, wl)
        result["start_ms"] = tracer.ms(tracer.t_spawn, tracer.t_attached)
    return result


def run_overhead(cfg, log):
    results = {q.id: {m: [] for m in cfg.modes} for q in cfg.queries}
    flagged = {q.id: {m: [] for m in cfg.modes} for q in cfg.queries}
    insns = {q.id: {} for q in cfg.queries}
    problems = []
    for rnd in range(cfg.rounds):
        for query in cfg.queries:
            calls = max(1000, cfg.calls // query.calls_div)
            # Forward in even rounds, backward in odd ones: a disturbance that comes at the same
            # point of every round (or a slow drift) does not always land on the same mode.
            for mode in cfg.modes if rnd % 2 == 0 else list(reversed(cfg.modes)):
                if mode == "rawfloor" and not query.raw:
                    results[query.id][mode].append(None)
                    flagged[query.id][mode].append(None)
                    continue
                r = measure_mode(cfg, query, mode, calls, rnd == 0)
                # A figure taken while another tracer was attached stays out of the medians.
                clean = not r.get("foreign")
                results[query.id][mode].append(r.get("ns") if clean else None)
                flagged[query.id][mode].append(None if clean else r.get("ns"))
                if "insns" in r:
                    insns[query.id][mode] = r["insns"]
                issue = "; ".join(filter(None, (r.get("error"), r.get("problem"),
                                                r.get("foreign"))))
                if issue:
                    problems.append(f"round {rnd + 1}, {query.id}, {mode}: {issue}")
                log(f"round {rnd + 1}/{cfg.rounds} {query.id:26s} {mode:9s} "
                    + (f"{r['ns']:8.1f} ns/call" if r.get("ns") is not None else "   failed")
                    + (f"  [{issue.splitlines()[0]}]" if issue else ""))
    return results, insns, problems, flagged


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def added_over_floor(per_mode, mode, floor="floor"):
    """Median over rounds of (mode - floor) in the same round: pairs cancel slow drifts."""
    pairs = [m - f for m, f in zip(per_mode.get(mode, []), per_mode.get(floor, []))
             if m is not None and f is not None]
    return statistics.median(pairs) if pairs else None


# --------------------------------------------------------------------------------------------
# Startup, memory, shutdown, idle CPU, map reads
# --------------------------------------------------------------------------------------------

def lifecycle(cfg, make_tracer, steady_after=2.0):
    """Start → attached, RSS after `steady_after` s, SIGINT → exit and → fully detached."""
    tracer = make_tracer()
    tracer.start(cfg.tracer_fifo)
    tracer.wait_ready(timeout=180)
    time.sleep(steady_after)
    steady_kb = proc_status_kb(tracer.pid, "VmRSS")
    hwm_kb = proc_status_kb(tracer.pid, "VmHWM") or 0
    tracer.stop()
    peak_kb = max(hwm_kb, tracer.rusage.ru_maxrss if tracer.rusage else 0)
    figures = {
        "attached_ms": tracer.ms(tracer.t_spawn, tracer.t_attached),
        "line_ms": tracer.ms(tracer.t_spawn, tracer.t_line),
        "steady_mb": steady_kb / 1024.0 if steady_kb else None,
        "peak_mb": peak_kb / 1024.0,
        "hwm_mb": hwm_kb / 1024.0,   # the tracer process alone
        # wait4's ru_maxrss: the largest of the process and the children it reaped (bpfql's
        # compile helper on a cold start)
        "maxrss_mb": tracer.rusage.ru_maxrss / 1024.0 if tracer.rusage else None,
        "sigint_exit_ms": tracer.ms(tracer.t_sigint, tracer.t_exit),
        "sigint_detached_ms": tracer.ms(tracer.t_sigint, tracer.t_detached),
    }
    if tracer.sigints_lost:   # its shutdown time is not comparable: left out of the medians
        figures["note"] = (f"needed {tracer.sigints_lost + 1} SIGINTs to exit "
                           f"({figures['sigint_exit_ms']:.0f} ms); shutdown times left out")
        figures["sigint_exit_ms"] = figures["sigint_detached_ms"] = None
    return figures


def idle_cpu(cfg, make_tracer, warmup=1.5):
    """% of one core used by the tracer over cfg.idle_seconds of tracing with a 1 s interval."""
    tracer = make_tracer()
    tracer.start(cfg.tracer_fifo)
    tracer.wait_ready(timeout=180)
    time.sleep(warmup)
    t0, c0 = time.monotonic(), proc_cpu_ns(tracer.pid)
    time.sleep(cfg.idle_seconds)
    t1, c1 = time.monotonic(), proc_cpu_ns(tracer.pid)
    prints = sum(1 for line in tracer.out if line.strip())
    tracer.stop()
    return {"cpu_pct": (c1 - c0) / ((t1 - t0) * 1e9) * 100.0, "output_lines": prints}


def map_read(cfg, make_tracer, keys):
    """SIGINT → exit with `keys` distinct keys in the map, and with an empty map; the
    difference is reading, merging, sorting and printing (detach and teardown cancel out)."""
    figures = {}
    for label, n in (("full", keys), ("empty", 0)):
        tracer = make_tracer()
        tracer.start(cfg.tracer_fifo)
        tracer.wait_ready(timeout=180)
        time.sleep(cfg.settle)
        if n:
            run_workload(cfg, "lseek", n)
        tracer.stop()
        figures[label + "_ms"] = tracer.ms(tracer.t_sigint, tracer.t_exit)
        figures[label + "_out"] = tracer.out[-60:]
        figures[label + "_err"] = [l for l in tracer.err if "timing:" in l]
    figures["read_ms"] = figures["full_ms"] - figures["empty_ms"]
    rows = [line for line in figures["full_out"] if re.match(r"^\s*\d+\s+\d+\s*$", line)]
    if len(rows) < 20:
        raise TracerFailed(f"map read: {len(rows)} rows printed, expected the top 20:\n"
                           + "\n".join(figures["full_out"][-25:]))
    return figures


def extras_tools(cfg):
    one = ["raw_syscalls:sys_enter"]
    return {
        "start_1tp": {
            "bcc": lambda: bcc_tracer(cfg, "count_by_comm", one, dump=20),
            "bpftrace": lambda: bpftrace_tracer(cfg, "count_by_comm", one),
            "bpfql_cold": lambda: bpfql_tracer(cfg, "count_by_comm", one, fmt="table",
                                               cache="cold"),
            "bpfql": lambda: bpfql_tracer(cfg, "count_by_comm", one, fmt="table"),
        },
        "start_10tp": {
            "bcc": lambda: bcc_tracer(cfg, "count_by_comm_multi", TEN_TRACEPOINTS,
                                      function="count_comm", dump=20),
            "bpftrace": lambda: bpftrace_tracer(cfg, "count_by_comm_10tp", TEN_TRACEPOINTS),
            "bpfql_cold": lambda: bpfql_tracer(cfg, "count_by_comm_10tp", TEN_TRACEPOINTS,
                                               fmt="table", cache="cold"),
            "bpfql": lambda: bpfql_tracer(cfg, "count_by_comm_10tp", TEN_TRACEPOINTS,
                                          fmt="table"),
        },
        "idle": {
            "bpftrace": lambda: bpftrace_tracer(cfg, "count_by_comm_interval", one),
            "bpfql": lambda: bpfql_tracer(cfg, "count_by_comm_interval", one, fmt="table"),
        },
        "map": {
            "bcc": lambda: bcc_tracer(cfg, "count_by_offset", ["syscalls:sys_enter_lseek"],
                                      dump=20),
            "bpfql": lambda: bpfql_tracer(cfg, "count_by_offset", ["syscalls:sys_enter_lseek"],
                                          fmt="table"),
        },
    }


def run_extras(cfg, log):
    tools = extras_tools(cfg)
    if "bpfql" not in cfg.modes:
        for group in tools.values():
            group.pop("bpfql", None)
            group.pop("bpfql_cold", None)
    else:
        prime_bpfql_cache(cfg, ["count_by_comm", "count_by_comm_10tp", "count_by_comm_interval",
                                "count_by_offset"])
    runs = {group: {tool: [] for tool in members} for group, members in tools.items()}
    problems = []

    def attempt(group, tool, fn):
        others = wait_for_quiet(set(), cfg.patience)
        if others:
            problems.append(f"{group}, {tool}: started with other tracers attached: "
                            + "; ".join(others))
        try:
            figures = fn()
            runs[group][tool].append(figures)
            if figures.get("note"):
                problems.append(f"{group}, {tool}: {figures['note']}")
            shown = {k: round(v, 2) for k, v in figures.items() if isinstance(v, float)}
            log(f"{group:10s} {tool:9s} {shown}")
        except TracerFailed as failure:
            problems.append(f"{group}, {tool}: {failure}")
            log(f"{group:10s} {tool:9s} failed: {str(failure).splitlines()[0]}")

    for _ in range(cfg.rounds):   # taking turns, like the overhead rounds
        for group in ("start_1tp", "start_10tp"):
            for tool, make in tools[group].items():
                attempt(group, tool, lambda make=make: lifecycle(cfg, make))
        for tool, make in tools["idle"].items():
            attempt("idle", tool, lambda make=make: idle_cpu(cfg, make))
        for tool, make in tools["map"].items():
            attempt("map", tool, lambda make=make: map_read(cfg, make, cfg.map_keys))
    return runs, problems


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------

def fmt(value, digits=1, suffix=""):
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def ratio(a, b):
    if a is None or b is None:
        return None
    if b <= 0:
        return float("inf") if a > 0 else None
    return a / b


def verdict(value, target, lower_is_better=True):
    if value is None:
        return "—"
    if value == float("inf"):
        return "n/a (denominator ≤ 0)"
    return "PASS" if (value <= target if lower_is_better else value >= target) else "MISS"


def overhead_table(cfg, results):
    head = ["query", "workload"] + [f"{MODE_TITLES[m]} ns" for m in cfg.modes]
    added_modes = [m for m in ("bcc", "bpftrace", "bpfql") if m in cfg.modes]
    head += [f"+{MODE_TITLES[m]}" for m in added_modes]
    head += ["bpfql/BCC (≤1.10)", "bpfql/bpftrace (≤0.60)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary = []
    for query in cfg.queries:
        per_mode = results[query.id]
        added = {m: added_over_floor(per_mode, m) for m in added_modes}
        r_bcc, r_bt = ratio(added.get("bpfql"), added.get("bcc")), \
            ratio(added.get("bpfql"), added.get("bpftrace"))
        v_bcc, v_bt = verdict(r_bcc, TARGETS["vs_bcc"]), verdict(r_bt, TARGETS["vs_bpftrace"])
        if added.get("bpfql") is not None and added["bpfql"] <= 0:
            # A raw tracepoint costs less than the empty tracepoint program: a ratio below 0
            # says nothing more than "cheaper than the floor" (the next table has the rest).
            r_bcc = r_bt = None
            v_bcc = v_bt = "< 0 PASS (below the floor)"
        elif v_bcc != "PASS" and added.get("bpfql") is not None and added.get("bcc") is not None \
                and added["bpfql"] - added["bcc"] <= cfg.resolution:
            # Both add next to nothing (or the same): a ratio of two noises means nothing.
            v_bcc = f"PASS (Δ {added['bpfql'] - added['bcc']:+.1f} ns ≤ {cfg.resolution:g})"
        summary.append((query, v_bcc, v_bt))
        calls = max(1000, cfg.calls // query.calls_div)
        cells = [query.title, f"{query.workload} ×{calls:,}"]
        cells += [fmt(median(per_mode[m])) for m in cfg.modes]
        cells += [fmt(added[m]) for m in added_modes]
        cells += [f"{fmt(r_bcc, 2)} {v_bcc}" if r_bcc is not None else v_bcc,
                  f"{fmt(r_bt, 2)} {v_bt}" if r_bt is not None else v_bt]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, summary


def own_floor_table(cfg, results):
    """The queries bpfql runs as raw tracepoints, with each tool's program measured over the
    empty program attached the way that tool attaches: bpfql over the raw floor, BCC and
    bpftrace (tracepoints) over the tracepoint floor. What is left is the programs' own work."""
    raw = [q for q in cfg.queries if q.raw]
    if not raw or "rawfloor" not in cfg.modes:
        return []
    lines = ["| query | raw floor − floor | +BCC over floor | +bpftrace over floor | "
             "+bpfql over raw floor | bpfql/BCC | bpfql/bpftrace |", "|---|---|---|---|---|---|---|"]
    for query in raw:
        per_mode = results[query.id]
        mech = added_over_floor(per_mode, "rawfloor")
        bcc, bt = added_over_floor(per_mode, "bcc"), added_over_floor(per_mode, "bpftrace")
        ours = added_over_floor(per_mode, "bpfql", floor="rawfloor")
        lines.append(f"| {query.title} | {fmt(mech)} | {fmt(bcc)} | {fmt(bt)} | {fmt(ours)} | "
                     f"{fmt(ratio(ours, bcc), 2)} | {fmt(ratio(ours, bt), 2)} |")
    return lines


def insns_table(cfg, insns):
    """Per program, in the order of the probes (a span's begin first); the verdict holds each of
    bpfql's programs to the hand-written BCC program on the same probe, and the total to BCC's."""
    lines = ["| query | BCC | bpftrace | bpfql | bpfql ≤ BCC |", "|---|---|---|---|---|"]
    for query in cfg.queries:
        cells = []
        for mode in ("bcc", "bpftrace", "bpfql"):
            progs = insns[query.id].get(mode)
            cells.append("—" if not progs else
                         " + ".join(f"{n} ({name})" for name, n in progs))
        bcc, ours = insns[query.id].get("bcc"), insns[query.id].get("bpfql")
        if bcc and ours:
            total_bcc, total_ours = sum(n for _, n in bcc), sum(n for _, n in ours)
            each = len(bcc) == len(ours) and all(
                o <= b for (_, o), (_, b) in zip(sorted(ours), sorted(bcc, key=lambda p: p[0])))
            verdict = ("PASS" if total_ours <= total_bcc else "MISS") + \
                f" ({total_ours}/{total_bcc})" + ("" if each or len(bcc) == 1 else
                                                   ", not program for program")
        else:
            verdict = "—"
        lines.append(f"| {query.title} | " + " | ".join(cells) + f" | {verdict} |")
    return lines


def run_insns_only(cfg, log):
    """Each tool's programs for each query, attached once and listed: no workload, no timing.
    Instruction counts are deterministic, so this is the figure a loaded machine can give."""
    insns = {q.id: {} for q in cfg.queries}
    for query in cfg.queries:
        for mode in ("bcc", "bpftrace", "bpfql"):
            if mode not in cfg.modes:
                continue
            tracer = mode_tracer(cfg, query, mode)
            tracer.start(cfg.tracer_fifo)
            try:
                tracer.wait_ready(timeout=180)
                insns[query.id][mode] = xlated(cfg, tracer, f"{query.id}.{mode}")
            except TracerFailed as failure:
                log(f"{query.id} {mode}: {failure}")
            finally:
                try:
                    tracer.stop()
                except TracerFailed:
                    pass
            log(f"{query.id:26s} {mode:9s} " +
                " + ".join(f"{n} ({name})" for name, n in insns[query.id].get(mode, [])))
    return insns


def rounds_table(cfg, results, flagged):
    lines = ["| query | mode | ns/call per round (× = another tracer was attached: left out) |",
             "|---|---|---|"]
    for query in cfg.queries:
        for mode in cfg.modes:
            values = ", ".join(fmt(v) if f is None else f"×{fmt(f)}"
                               for v, f in zip(results[query.id][mode], flagged[query.id][mode]))
            lines.append(f"| {query.id} | {mode} | {values} |")
    return lines


def extra_median(runs, group, tool, key):
    return median([r.get(key) for r in runs.get(group, {}).get(tool, [])])


def extras_table(runs):
    def m(group, tool, key):
        return extra_median(runs, group, tool, key)

    def row(label, group, key, digits, target_text="", check=None):
        cells = [fmt(m(group, tool, key), digits)
                 for tool in ("bcc", "bpftrace", "bpfql_cold", "bpfql")]
        result = check() if check else ""
        return f"| {label} | " + " | ".join(cells) + f" | {target_text} | {result} |"

    def start_ratio(tool):
        r = ratio(m("start_1tp", tool, "attached_ms"), m("start_1tp", "bpftrace", "attached_ms"))
        return f"{fmt(r, 2)} {verdict(r, TARGETS['start_ratio'])}"

    def rss_verdict(key):
        q, t = m("start_1tp", "bpfql", key), m("start_1tp", "bpftrace", key)
        qc = m("start_1tp", "bpfql_cold", key)
        if not (q and t):
            return "—"
        return (f"warm {verdict(ratio(q, t), 1.0)}" +
                (f", cold {verdict(ratio(qc, t), 1.0)}" if qc else ""))

    lines = [
        "| measure | BCC (C++ runner) | bpftrace | bpfql, cold cache | bpfql, warm cache "
        "| target | result |",
        "|---|---|---|---|---|---|---|",
        row("start → attached, 1 tracepoint (ms)", "start_1tp", "attached_ms", 0,
            "bpfql/bpftrace ≤ 1.0",
            lambda: f"warm {start_ratio('bpfql')}; cold {start_ratio('bpfql_cold')}"),
        row("start → \"Tracing\"/\"Attaching\" line (ms)", "start_1tp", "line_ms", 0),
        row("start → attached, 10 tracepoints (ms)", "start_10tp", "attached_ms", 0),
        row("peak RSS of the process, 1 tracepoint (MB, VmHWM)", "start_1tp", "hwm_mb", 1,
            "≤ bpftrace's", lambda: rss_verdict("hwm_mb")),
        row("peak RSS incl. reaped children (MB, ru_maxrss)", "start_1tp", "maxrss_mb", 1,
            "", lambda: rss_verdict("maxrss_mb")),
        row("steady RSS after 2 s (MB)", "start_1tp", "steady_mb", 1),
        row("SIGINT → exit, 1 tracepoint (ms)", "start_1tp", "sigint_exit_ms", 0),
        row("SIGINT → probes detached, 1 tracepoint (ms)", "start_1tp", "sigint_detached_ms", 0),
        row("SIGINT → exit, 10 tracepoints (ms)", "start_10tp", "sigint_exit_ms", 0, "≤ 150 ms",
            lambda: verdict(m("start_10tp", "bpfql", "sigint_exit_ms"),
                            TARGETS["sigint_10tp_ms"])),
        row("SIGINT → probes detached, 10 tracepoints (ms)", "start_10tp",
            "sigint_detached_ms", 0),
        row("CPU between 1 s intervals (% of a core)", "idle", "cpu_pct", 3, "≤ 0.5 %",
            lambda: verdict(m("idle", "bpfql", "cpu_pct"), TARGETS["cpu_pct"])),
        row("100k-key map: SIGINT → exit (ms)", "map", "full_ms", 0),
        row("same, empty map (ms)", "map", "empty_ms", 0),
        row("100k-key map read+merge+top 20 (ms, difference)", "map", "read_ms", 0, "≤ 60 ms",
            lambda: verdict(m("map", "bpfql", "read_ms"), TARGETS["map_100k_ms"])),
    ]
    return lines


def environment(cfg):
    def run(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT).stdout.strip()
        except OSError:
            return "?"
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "kernel": platform.release(), "cpus": os.cpu_count(), "load": load,
        "bpftrace": run([cfg.bpftrace, "--version"]),
        "git": run(["git", "rev-parse", "--short", "HEAD"]) +
               (" (dirty tree)" if run(["git", "status", "--porcelain"]) else ""),
    }


def report(cfg, env_start, env_end, overhead, extras):
    out = [f"# bpfql benchmarks — {env_start['date']}", "",
           f"Kernel {env_start['kernel']}, {env_start['cpus']} CPUs, {env_start['bpftrace']}, "
           f"bpfql at {env_start['git']}. Load average {env_start['load']} at the start, "
           f"{env_end['load']} at the end. {cfg.rounds} round(s); workload pinned to CPU "
           f"{cfg.cpu}; figures are medians over rounds (each run's figure is the median of 10 "
           f"timed batches).", ""]
    problems = []
    if overhead:
        results, insns, problems_o, flagged = overhead
        problems += problems_o
        table, _ = overhead_table(cfg, results)
        out += ["## Cost per event", "",
                "ns per system call of the workload (median); `+X` = what X adds over the "
                "empty program on the same probe (median of per-round differences).", ""]
        out += table
        own = own_floor_table(cfg, results)
        if own:
            out += ["", "### The programs alone, each over its own attach", "",
                    "bpfql attaches queries that read no field of the record as raw "
                    "tracepoints, which the kernel calls without building the record; BCC's "
                    "TRACEPOINT_PROBE and bpftrace's `tracepoint:` attach as tracepoints. Here "
                    "each program is measured over the empty program attached the same way "
                    "(`raw floor − floor` is what the attach alone saves).", ""] + own
        out += ["", "## BPF instructions per program (xlated, after the verifier)", ""]
        out += insns_table(cfg, insns)
        out += ["", "<details><summary>Every round</summary>", ""] + rounds_table(cfg, results, flagged)
        out += ["", "</details>", ""]
    if extras:
        runs, problems_e = extras
        problems += problems_e
        out += ["## Startup, shutdown, memory, CPU, map reads", ""] + extras_table(runs) + [""]
        out += ["Start → attached: until the kernel reports every program attached "
                "(BPF_TASK_FD_QUERY on the tracer's fds), the same test for each tool. "
                "SIGINT → exit: until the process is reaped; → detached: until any process it "
                "left behind (bpfql's detach holder) is gone too. Map read: SIGINT → exit with "
                "the map full minus the same with it empty (detach and teardown cancel out); "
                "the BCC runner reads key by key (get_next_key + lookup) and prints its top 20 "
                "for reference.", ""]
    out += ["## Problems", ""] + ([f"- {p.splitlines()[0]}" for p in problems] or ["none"])
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------

def find_binary(build_dir, names):
    for name in names:
        path = os.path.join(build_dir, name)
        if os.access(path, os.X_OK):
            return path
    return os.path.join(build_dir, names[0])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.environ.get("BPFQL_BUILD_DIR",
                                                         os.path.join(ROOT, "build-bench")))
    p.add_argument("--bpfql", help="bpfql binary (default: BUILD_DIR/bpfql)")
    p.add_argument("--bpftrace", default="bpftrace")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=2_000_000,
                   help="getppid calls per run (reads: half, opens: a fifth)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: 1 round, 200k calls, short idle window")
    p.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    p.add_argument("--fifo", type=int, default=50,
                   help="SCHED_FIFO priority of the workload; the tracers run at this - 10 and "
                        "this harness at this + 10, so that a busy machine's other processes "
                        "do not time-share with what is measured (0: normal scheduling)")
    p.add_argument("--resolution", type=float, default=5.0,
                   help="ns: differences in added cost below this are read as equal")
    p.add_argument("--settle", type=float, default=0.5,
                   help="seconds to wait after a tracer is attached")
    p.add_argument("--patience", type=float, default=30.0,
                   help="seconds to wait for other processes' syscall tracers to go before a "
                        "measurement (it is then flagged)")
    p.add_argument("--queries", help="comma-separated query ids (default: all)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of "
                   + ",".join(MODES))
    p.add_argument("--map-keys", type=int, default=100_000)
    p.add_argument("--no-extras", action="store_true")
    p.add_argument("--no-overhead", action="store_true")
    p.add_argument("--insns-only", action="store_true",
                   help="only attach each tool once per query and print the instructions of "
                        "its programs after the verifier (no workload; to --out, default "
                        "results/insns.md)")
    p.add_argument("--out")
    args = p.parse_args()
    if not args.out:
        args.out = os.path.join(BENCH, "results", "insns.md" if args.insns_only else "latest.md")
    return args


def make_config(args):
    if args.quick:
        args.rounds, args.calls = 1, 200_000
    build = os.path.abspath(args.build_dir)
    queries = QUERIES
    if args.queries:
        wanted = args.queries.split(",")
        unknown = set(wanted) - {q.id for q in QUERIES}
        if unknown:
            sys.exit(f"unknown query ids: {', '.join(sorted(unknown))}")
        queries = [q for q in QUERIES if q.id in wanted]
    modes = [m for m in MODES if m in args.modes.split(",")]
    return Config(
        cache_root=tempfile.mkdtemp(prefix="bpfql-bench-cache-"),   # 0700, root's
        bpfql=os.path.abspath(args.bpfql) if args.bpfql else find_binary(build, ["bpfql"]),
        workload=find_binary(build, ["bench/bench_workload"]),
        baseline=find_binary(build, ["bench/bench_baseline"]),
        bpftrace=args.bpftrace, rounds=args.rounds, calls=args.calls, cpu=args.cpu,
        fifo=args.fifo, tracer_fifo=max(0, args.fifo - 10) if args.fifo > 0 else 0,
        resolution=args.resolution,
        settle=args.settle, patience=args.patience, map_keys=args.map_keys,
        idle_seconds=3.0 if args.quick else 5.0, queries=queries, modes=modes,
        extras=not args.no_extras, overhead=not args.no_overhead, out=args.out,
        xlated_dir=os.path.join(os.path.dirname(os.path.abspath(args.out)), "xlated"),
        insns_only=args.insns_only)


def check_tools(cfg):
    missing = [p for p in (cfg.workload, cfg.baseline) if not os.access(p, os.X_OK)]
    if "bpfql" in cfg.modes and not os.access(cfg.bpfql, os.X_OK):
        missing.append(cfg.bpfql)
    if missing:
        sys.exit("missing (build first: bench/run.sh builds): " + ", ".join(missing))
    if os.geteuid() != 0:
        sys.exit("the benchmarks load BPF programs: run as root")


def main():
    cfg = make_config(parse_args())
    check_tools(cfg)
    become_subreaper()
    others = set(range(os.cpu_count() or 1)) - {cfg.cpu}
    if others:   # we and the tracers stay off the workload's CPU (the workload pins itself)
        os.sched_setaffinity(0, others)
    if cfg.fifo > 0:   # our polls time the tracers: they must not wait behind other work
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(min(99, cfg.fifo + 10)))

    def log(message):
        print(message, file=sys.stderr, flush=True)

    env_start = environment(cfg)
    if cfg.insns_only:
        try:
            insns = run_insns_only(cfg, log)
        finally:
            shutil.rmtree(cfg.cache_root, ignore_errors=True)
        text = "\n".join([f"# BPF instructions per program — {env_start['date']}", "",
                          f"Kernel {env_start['kernel']}, {env_start['bpftrace']}, bpfql at "
                          f"{env_start['git']}: xlated (after the verifier), each tool's "
                          "programs attached once, no workload (`bench/run.py --insns-only`). "
                          "Listings: `xlated/`.", ""] + insns_table(cfg, insns)) + "\n"
        print(text)
        with open(cfg.out, "w") as md:
            md.write(text)
        with open(os.path.splitext(cfg.out)[0] + ".json", "w") as js:
            json.dump(insns, js, indent=1)
        return
    log(f"bpfql benchmarks: load {env_start['load']}, {cfg.rounds} round(s), "
        f"{cfg.calls:,} calls, workload on CPU {cfg.cpu}")
    try:
        overhead = run_overhead(cfg, log) if cfg.overhead else None
        extras = run_extras(cfg, log) if cfg.extras else None
    finally:
        shutil.rmtree(cfg.cache_root, ignore_errors=True)
    text = report(cfg, env_start, environment(cfg), overhead, extras)
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(cfg.out)), exist_ok=True)
    with open(cfg.out, "w") as md:
        md.write(text)
    raw = {"config": {k: v for k, v in vars(cfg).items() if k != "queries"},
           "queries": [q.id for q in cfg.queries],
           "overhead": overhead[0] if overhead else None,
           "overhead_flagged": overhead[3] if overhead else None,
           "insns": overhead[1] if overhead else None,
           "extras": extras[0] if extras else None,
           "problems": (overhead[2] if overhead else []) + (extras[1] if extras else [])}
    with open(os.path.splitext(cfg.out)[0] + ".json", "w") as js:
        json.dump(raw, js, indent=1, default=str)


if __name__ == "__main__":
    main()
