#!/usr/bin/env python3
"""Time whole processes the way the scale figures (bench/SCALE.md) need, with public means only.

For one run of a command: wall time (from just before the fork to the reap), CPU time and peak
RSS from the kernel's rusage of the reaped child (`wait4`: the child plus every descendant it
waited for; the command runs under `/usr/bin/time`, whose own cost, about 1 ms, is included, and
whose `%M` gives the peak RSS), and the peak of `Private_Dirty` in `/proc/<pid>/smaps_rollup`, sampled by a thread
every SAMPLE_MS while the child runs (the child alone, not its descendants).

usage:
  runstat.py once [--sample-ms N] [--env-file F] -- CMD ARGS...
  runstat.py pair --runs N --a 'CMD' --b 'CMD' [--a-name A] [--b-name B]
                  [--before-a 'CMD'] [--before-b 'CMD'] [--warmup N] [--sample-ms N]
                  [--json FILE]

`pair` runs one warm-up of each side (not counted), then N pairs A B A B ..., each command a
string split as a shell splits words (no shell runs it). `--before-a` / `--before-b` run, untimed,
before each run of that side (e.g. a fresh copy of a state directory). It prints each run,
the medians of every figure, the ratio A/B of the medians and the median of the pairwise
ratios, and the load average before and after.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time


def private_dirty_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Private_Dirty:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_once(cmd, sample_ms=10, env=None):
    """Run CMD (a list) with its output discarded; returns a dict of its figures."""
    stop = threading.Event()
    peak = [0]
    rss_file = tempfile.NamedTemporaryFile(prefix="runstat-", delete=False)
    rss_file.close()
    # Through /usr/bin/time, for the peak RSS only: a child forked from this Python would
    # inherit its RSS (~15 MB) as the floor of its `ru_maxrss`; one forked from `time` does not.
    full = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file.name] + list(cmd)
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)

    def sample():
        child = None
        while not stop.is_set():
            if child is None:
                try:
                    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                        child = int(f.read().split()[0])
                except (OSError, IndexError, ValueError):
                    pass
            if child is not None:
                v = private_dirty_kb(child)
                if v > peak[0]:
                    peak[0] = v
            stop.wait(sample_ms / 1000)

    th = threading.Thread(target=sample, daemon=True)
    if sample_ms > 0:
        th.start()
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.perf_counter_ns()
    stop.set()
    if sample_ms > 0:
        th.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    with open(rss_file.name) as f:
        lines = [ln for ln in f.read().split() if ln.isdigit()]
    os.unlink(rss_file.name)
    maxrss = int(lines[-1]) if lines else 0
    return {
        "wall_ms": (t1 - t0) / 1e6,
        "user_ms": ru.ru_utime * 1000,
        "sys_ms": ru.ru_stime * 1000,
        "cpu_ms": (ru.ru_utime + ru.ru_stime) * 1000,
        "maxrss_kb": maxrss,
        "private_dirty_kb": peak[0],
        "exit": p.returncode,
    }


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


FIGS = ["wall_ms", "cpu_ms", "user_ms", "sys_ms", "maxrss_kb", "private_dirty_kb"]


def pair(a, b, runs, a_name="A", b_name="B", before_a=None, before_b=None, warmup=1,
         sample_ms=10, out=sys.stdout):
    def hook(h):
        if h:
            subprocess.run(h, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)

    load0 = loadavg()
    for _ in range(warmup):
        hook(before_a)
        run_once(a, sample_ms)
        hook(before_b)
        run_once(b, sample_ms)
    ra, rb = [], []
    for i in range(runs):
        hook(before_a)
        ra.append(run_once(a, sample_ms))
        hook(before_b)
        rb.append(run_once(b, sample_ms))
        print(f"pair {i + 1}: {a_name} wall {ra[-1]['wall_ms']:.0f} ms cpu {ra[-1]['cpu_ms']:.0f} ms"
              f" exit {ra[-1]['exit']} | {b_name} wall {rb[-1]['wall_ms']:.0f} ms"
              f" cpu {rb[-1]['cpu_ms']:.0f} ms exit {rb[-1]['exit']}  (load {loadavg()})",
              file=out, flush=True)
    load1 = loadavg()
    res = {"a": a_name, "b": b_name, "runs": runs, "load_before": load0, "load_after": load1,
           "a_runs": ra, "b_runs": rb, "median": {}, "ratio_of_medians": {},
           "median_pair_ratio": {}}
    for k in FIGS:
        ma, mb = median([r[k] for r in ra]), median([r[k] for r in rb])
        res["median"][k] = {a_name: ma, b_name: mb}
        res["ratio_of_medians"][k] = ma / mb if mb else None
        pr = [x[k] / y[k] for x, y in zip(ra, rb) if y[k]]
        res["median_pair_ratio"][k] = median(pr) if pr else None
    print(f"load average before / after: {load0} / {load1}", file=out)
    print(f"{'figure':<18}{a_name:>14}{b_name:>14}{'A/B medians':>14}{'median A/B pair':>17}",
          file=out)
    for k in FIGS:
        m = res["median"][k]
        r1, r2 = res["ratio_of_medians"][k], res["median_pair_ratio"][k]
        print(f"{k:<18}{m[a_name]:>14.1f}{m[b_name]:>14.1f}"
              f"{(f'{r1:.3f}' if r1 is not None else '-'):>14}"
              f"{(f'{r2:.3f}' if r2 is not None else '-'):>17}", file=out)
    return res


def main(argv):
    if not argv or argv[0] not in ("once", "pair"):
        sys.exit(__doc__)
    mode, args = argv[0], argv[1:]
    opts = {"--sample-ms": "10", "--runs": "7", "--warmup": "1"}
    cmd = []
    while args:
        if args[0] == "--":
            cmd = args[1:]
            break
        if len(args) < 2:
            sys.exit(f"missing value for {args[0]}")
        opts[args[0]] = args[1]
        args = args[2:]
    sample = int(opts["--sample-ms"])
    if mode == "once":
        print(json.dumps(run_once(cmd, sample)))
        return
    split = lambda k: shlex.split(opts[k]) if k in opts else None  # noqa: E731
    res = pair(split("--a"), split("--b"), int(opts["--runs"]), opts.get("--a-name", "A"),
               opts.get("--b-name", "B"), split("--before-a"), split("--before-b"),
               int(opts["--warmup"]), sample)
    if "--json" in opts:
        with open(opts["--json"], "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
