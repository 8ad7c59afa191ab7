#!/usr/bin/env bash
# What "re-judge at the moment of action" (issue 8) costs: the same 500-item prune of a Celesto
# data directory on the executor before it (commit 9212880) and on the current one, alternating
# old/new, medians of wall and CPU time, ratio new/old. Goal: ≤ 1.3×.
#
# Modes (all by default, interleaved in every round):
#   prune  `smolsweep prune --yes --json`: scan, plan and execute in one process (the new
#          executor re-judges on the scan it just made, seeded, plus /proc every 250 ms)
#   apply  `smolsweep apply --yes --json PLAN`, PLAN written beforehand by the same binary's
#          `smolsweep plan --out` (untimed); the new executor scans again before the first action
#   scan   `smolsweep scan --json` alone on the same tree (what a re-scan costs)
#
# Usage: bench/rejudge_cost.sh [--runs N (7)] [--dir PARENT (/dev/shm)] [--modes "prune apply scan"]
#          [--old BIN | --old-rev REV (9212880)] [--new BIN | --new-rev REV (HEAD)]
#          [--disks N (200)] [--companions N (100)] [--logs N (200)] [--live N (6)]
#          [--strace] [--keep]
# Without --old/--new each revision is checked out in a temporary `git worktree` and built with
# `cargo build --release --bin smolsweep` into its own CARGO_TARGET_DIR
# ($BUILD_PARENT or /tmp)/rejudge-target-{old,new} (kept: a second run only recompiles smolsweep; the
# repository's own target/ is never written). --strace adds one `strace -c -f` run of each
# binary per mode after the timed rounds. Needs: python3, git, cargo (to build), GNU coreutils.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=7
PARENT=/dev/shm
MODES="prune apply scan"
OLD_BIN="" NEW_BIN=""
OLD_REV=9212880 NEW_REV=HEAD
DISKS=200 COMPANIONS=100 LOGS=200 LIVE=6
STRACE=0 KEEP=0
BUILD_PARENT=${BUILD_PARENT:-/tmp}

while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --dir) PARENT=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --old) OLD_BIN=$2; shift 2 ;;
    --new) NEW_BIN=$2; shift 2 ;;
    --old-rev) OLD_REV=$2; shift 2 ;;
    --new-rev) NEW_REV=$2; shift 2 ;;
    --disks) DISKS=$2; shift 2 ;;
    --companions) COMPANIONS=$2; shift 2 ;;
    --logs) LOGS=$2; shift 2 ;;
    --live) LIVE=$2; shift 2 ;;
    --strace) STRACE=1; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

# build NAME REV: a release smolsweep of REV, built in a temporary worktree; prints its path.
build() {
  local name=$1 rev=$2
  local sha wt tgt
  sha=$(git -C "$REPO" rev-parse --short=12 "$rev^{commit}")
  wt=$(mktemp -d "$BUILD_PARENT/rejudge-src-$name.XXXXXX")
  tgt=$BUILD_PARENT/rejudge-target-$name
  rmdir "$wt"
  git -C "$REPO" worktree add --detach --quiet "$wt" "$sha" >&2
  # Dependencies are the same crates at the same versions (Cargo.lock): start from a copy of the
  # repository's release artifacts, when there are some, so that only smolsweep compiles.
  if [ ! -d "$tgt/release" ] && [ -d "$REPO/target/release/deps" ]; then
    mkdir -p "$tgt/release"
    cp -a "$REPO/target/release/deps" "$REPO/target/release/build" \
      "$REPO/target/release/.fingerprint" "$tgt/release/" 2>/dev/null || true
  fi
  echo "building $name = $rev ($sha) into $tgt ..." >&2
  if ! (cd "$wt" && CARGO_TARGET_DIR=$tgt cargo build --release --quiet --bin smolsweep) >&2; then
    git -C "$REPO" worktree remove --force "$wt"
    echo "build of $rev failed" >&2
    exit 1
  fi
  git -C "$REPO" worktree remove --force "$wt"
  echo "$sha" > "$tgt/release/smolsweep.rev"
  echo "$tgt/release/smolsweep"
}

[ -n "$OLD_BIN" ] || OLD_BIN=$(build old "$OLD_REV")
[ -n "$NEW_BIN" ] || NEW_BIN=$(build new "$NEW_REV")
for b in "$OLD_BIN" "$NEW_BIN"; do
  [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }
done

WORK=$(mktemp -d "$PARENT/rejudge-bench.XXXXXX")
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT

python3 - "$REPO" "$WORK" "$OLD_BIN" "$NEW_BIN" "$RUNS" "$MODES" "$DISKS" "$COMPANIONS" \
  "$LOGS" "$LIVE" "$STRACE" <<'PYEOF'
import json, os, random, re, shutil, sqlite3, statistics, struct, subprocess, sys, time

(repo, work, old_bin, new_bin, runs, modes, n_disks, n_comp, n_logs, n_live,
 use_strace) = sys.argv[1:]
runs, n_disks, n_comp, n_logs, n_live = map(int, (runs, n_disks, n_comp, n_logs, n_live))
modes = modes.split()
BINS = {"old": old_bin, "new": new_bin}
VERSION = "0.1.10"  # the Celesto version the image cache is named after
for m in modes:
    if m not in ("prune", "apply", "scan"):
        sys.exit("unknown mode " + m)
if n_comp > n_disks:
    sys.exit("--companions must not exceed --disks")


def schema():
    """celesto 0.1.10's schema, exactly as the fixture crate lays it out."""
    src = open(os.path.join(repo, "tests/fixtures/src/celesto.rs"), encoding="utf-8").read()
    m = re.search(r'pub const CELESTO_SCHEMA: &str = r#"(.*?)"#;', src, re.S)
    if not m:
        sys.exit("CELESTO_SCHEMA not found in tests/fixtures/src/celesto.rs")
    return m.group(1)


def qcow2_header(virtual_size):
    # QEMU docs/interop/qcow2.txt: version 3, 64 KiB clusters, no backing file, 104 bytes.
    return struct.pack(">4sIQIIQIIQQIIQQQQII", b"QFI\xfb", 3, 0, 0, 16, virtual_size, 0,
                       1, 0x30000, 0x10000, 1, 0, 0, 0, 0, 0, 4, 104)


def generate(home):
    """The template HOME. Returns (reclaimable paths, protected paths), relative to HOME."""
    rnd = random.Random(8)
    data = os.path.join(home, ".local/state/celesto")
    disks = os.path.join(data, "disks")
    img = os.path.join(home, ".celesto/images", "ubuntu-v%s-amd64-qemu" % VERSION)
    for d in (data, disks):
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
    os.makedirs(img)
    live, orphans = [], []

    def write(path, body, mode=0o644, into=None):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        (live if into is None else into).append(path)

    line = b"[    0.000000] Linux version 6.1.0 (console)\n"
    disk = lambda i, n, into: write(os.path.join(disks, i + ".qcow2"),
                                    qcow2_header(1 << 30) + rnd.randbytes(n - 104), into=into)
    log = lambda i, n, into: write(os.path.join(data, i + ".log"),
                                   (line * (n // len(line) + 1))[:n], 0o600, into=into)

    def companion(disk_name, n, into):
        suffix = rnd.choice([".backing-%08x.qcow2", ".create-backup-%08x"]) % rnd.getrandbits(32)
        write(os.path.join(disks, disk_name + suffix), rnd.randbytes(n), into=into)

    write(os.path.join(img, "vmlinux.bin"), rnd.randbytes(64 << 10))
    write(os.path.join(img, "initrd.img"), rnd.randbytes(32 << 10))
    db = os.path.join(data, "celesto.db")
    c = sqlite3.connect(db)
    c.executescript(schema())
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00", time.gmtime(time.time() - 7200))
    for k in range(n_live):  # live sandboxes (stopped QEMU rows): protected with their files
        i = "live-%04d-%06x" % (k, rnd.getrandbits(24))
        cfg = {"vm_id": i, "preset": None, "vcpu_count": 1, "memory": 256,
               "guest_os": "alpine", "boot_mode": "direct_kernel",
               "kernel_path": os.path.join(img, "vmlinux.bin"),
               "initrd_path": os.path.join(img, "initrd.img"),
               "rootfs_path": os.path.join(disks, i + ".qcow2"), "rootfs_format": "qcow2",
               "macos_machine": None, "extra_drives": [],
               "boot_args": "console=ttyS0 reboot=k panic=1 rdinit=/init",
               "ssh_capable": False, "backend": "qemu", "qemu_network": "slirp",
               "qemu_machine": "auto", "disk_mode": "isolated", "disk_size_mib": None,
               "grow_filesystem": False, "retain_disk_on_delete": False, "env_vars": {},
               "network_rate_limit_mbps": None, "port_forwards": [], "vsock": None,
               "comm_channel": None, "internet_settings": None, "workspace_mounts": [],
               "ssh_public_key": None, "guest_managed_networking": False,
               "network_attachment": {"mode": "nat", "bridge": None}}
        net = {"guest_ip": "10.0.2.15", "gateway_ip": "10.0.2.2", "netmask": "255.255.255.0",
               "tap_device": "usernet", "guest_mac": "AA:FC:00:00:08:99",
               "ssh_host_port": 2200 + k, "egress_proxy_host_port": None, "mode": "nat",
               "bridge": None}
        c.execute("INSERT INTO vms (id, status, config, network, pid, socket_path, display,"
                  " created_at, updated_at) VALUES (?, 'stopped', ?, ?, NULL, NULL, NULL, ?, ?)",
                  (i, json.dumps(cfg), json.dumps(net), stamp, stamp))
        disk(i, rnd.randint(64, 512) << 10, None)
        if k % 2 == 0:
            companion(i + ".qcow2", rnd.randint(4, 64) << 10, None)
        log(i, rnd.randint(1, 64) << 10, None)
    c.commit()
    c.close()
    os.chmod(db, 0o600)
    live.append(db)
    ids = ["sbx-%04d-%08x" % (k, rnd.getrandbits(32)) for k in range(max(n_disks, n_logs))]
    for k in range(n_disks):
        disk(ids[k], rnd.randint(4, 256) << 10, orphans)
    for k in range(n_comp):
        companion(ids[k] + ".qcow2", rnd.randint(4, 64) << 10, orphans)
    for k in range(n_logs):
        log(ids[k], rnd.randint(1, 64) << 10, orphans)
    now = time.time()
    for p in live + orphans:  # 10 to 60 minutes old: past the 2-minute age guard
        t = now - rnd.uniform(600, 3600)
        os.utime(p, (t, t))
    rel = lambda ps: sorted(os.path.relpath(p, home) for p in ps)
    return rel(orphans), rel(live)


TEMPLATE = os.path.join(work, "template")
HOME = os.path.join(work, "home")
JOURNAL = os.path.join(work, "journal")
SOCK = os.path.join(work, "sock")
ORPHANS, LIVE = generate(TEMPLATE)
EXPECTED = len(ORPHANS)
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": HOME,
       "SMOLSWEEP_DATA_DIR": JOURNAL, "SMOLSWEEP_SOCKET_DIR": SOCK}


def files_under(d):
    return sorted(os.path.relpath(os.path.join(r, f), d)
                  for r, _, fs in os.walk(d) for f in fs)


def fresh_tree():
    for d in (HOME, JOURNAL, SOCK):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(TEMPLATE, HOME, symlinks=True, copy_function=shutil.copy2)
    for src, _, fs in os.walk(TEMPLATE):  # copytree keeps file mtimes; keep the dirs' too
        st = os.lstat(src)
        os.utime(os.path.join(HOME, os.path.relpath(src, TEMPLATE)), ns=(st.st_atime_ns, st.st_mtime_ns))
    os.mkdir(JOURNAL, 0o700)
    os.mkdir(SOCK, 0o700)
    os.sync()


def fail(msg, out=None):
    if out and os.path.exists(out):
        sys.stderr.write(open(out, errors="replace").read()[:4000] + "\n")
    sys.exit("FAILED: " + msg)


def timed(argv, out):
    """Run argv with ENV; returns (wall s, cpu s = user + sys of the child, exit code)."""
    with open(out, "wb") as f:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=ENV, stdin=subprocess.DEVNULL, stdout=f)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode


def check_result(side, mode, rc, out):
    if rc != 0:
        fail("%s %s exited %d" % (side, mode, rc), out)
    r = json.load(open(out))
    done = sorted(os.path.relpath(a["path"], HOME) for a in r["done"])
    if len(r["done"]) != EXPECTED or done != ORPHANS or r["skipped"] or r["failed"]:
        fail("%s %s: done %d (expected exactly the %d orphans), skipped %d, failed %d"
             % (side, mode, len(r["done"]), EXPECTED, len(r["skipped"]), len(r["failed"])), out)
    left = [p for p in files_under(HOME) if p != ".local/state/celesto/celesto.db-journal"]
    if left != LIVE:
        fail("%s %s: the tree left is not exactly the live files (%d left, %d live)"
             % (side, mode, len(left), len(LIVE)))


def plan_for(side):
    plan = os.path.join(work, "plan.json")
    p = subprocess.run([BINS[side], "plan", "--out", plan], env=ENV, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        fail("%s plan --out exited %d: %s" % (side, p.returncode, p.stderr.decode()[-2000:]))
    n = len(json.load(open(plan))["actions"])
    if n != EXPECTED:
        fail("%s plan has %d actions, expected %d" % (side, n, EXPECTED))
    return plan


def measure(side, mode):
    out = os.path.join(work, "out.json")
    fresh_tree()
    if mode == "prune":
        w, c, rc = timed([BINS[side], "prune", "--yes", "--json"], out)
        check_result(side, mode, rc, out)
    elif mode == "apply":
        plan = plan_for(side)
        shutil.rmtree(JOURNAL)
        os.mkdir(JOURNAL, 0o700)
        os.sync()
        w, c, rc = timed([BINS[side], "apply", "--yes", "--json", plan], out)
        check_result(side, mode, rc, out)
    else:
        w, c, rc = timed([BINS[side], "scan", "--json"], out)
        if rc != 0:
            fail("%s scan exited %d" % (side, rc), out)
        r = json.load(open(out))
        n = sum(f["verdict"] == "reclaimable" for f in r["findings"])
        if n != EXPECTED:
            fail("%s scan finds %d reclaimable, expected %d" % (side, n, EXPECTED), out)
    return w, c


nprocs = lambda: sum(e.isdigit() for e in os.listdir("/proc"))
fs = subprocess.run(["stat", "-f", "-c", "%T", work], capture_output=True, text=True).stdout.strip()
print("old: %s\nnew: %s" % (old_bin, new_bin))
print("tree: %d reclaimable (%d disks, %d companions, %d logs), %d live files (%d rows), fs=%s"
      % (EXPECTED, n_disks, n_comp, n_logs, len(LIVE), n_live, fs))
print("start: load %.2f %.2f %.2f, %d processes" % (os.getloadavg() + (nprocs(),)))
for side in BINS:  # warm-up: page cache for the binaries and the template
    for mode in modes:
        measure(side, mode)
res = {(s, m): [] for s in BINS for m in modes}
for r in range(1, runs + 1):
    order = ("old", "new") if r % 2 else ("new", "old")
    parts = []
    for mode in modes:
        for side in order:
            res[side, mode].append(measure(side, mode))
        parts.append("%s old %.3fs (cpu %.3fs) new %.3fs (cpu %.3fs)" % (
            mode, *res["old", mode][-1], *res["new", mode][-1]))
    print("round %d (%s first): %s" % (r, order[0], "; ".join(parts)), flush=True)
print("end: load %.2f %.2f %.2f, %d processes" % (os.getloadavg() + (nprocs(),)))
print()
print("| mode | old wall | new wall | wall ratio | old cpu | new cpu | cpu ratio | best old | best new | best ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for mode in modes:
    med = lambda s, k: statistics.median(x[k] for x in res[s, mode])
    best = lambda s: min(x[0] for x in res[s, mode])
    ow, nw, oc, nc = med("old", 0), med("new", 0), med("old", 1), med("new", 1)
    print("| %s | %.0f ms | %.0f ms | **%.2f** | %.0f ms | %.0f ms | **%.2f** | %.0f ms | %.0f ms | %.2f |"
          % (mode, ow * 1e3, nw * 1e3, nw / ow, oc * 1e3, nc * 1e3, nc / oc,
             best("old") * 1e3, best("new") * 1e3, best("new") / best("old")))

if use_strace == "1" and shutil.which("strace"):
    for mode in modes:
        for side in BINS:
            fresh_tree()
            argv = {"prune": [BINS[side], "prune", "--yes", "--json"],
                    "scan": [BINS[side], "scan", "--json"]}.get(mode)
            if mode == "apply":
                argv = [BINS[side], "apply", "--yes", "--json", plan_for(side)]
            log = os.path.join(work, "strace-%s-%s.txt" % (side, mode))
            subprocess.run(["strace", "-f", "-c", "-o", log] + argv, env=ENV,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
            lines = open(log).read().splitlines()
            total = [l for l in lines if l.strip().endswith("total")]
            print("\nstrace -c -f %s %s: %s" % (side, mode, total[0].split() if total else "?"))
            print("\n".join(lines[:14]))
PYEOF
