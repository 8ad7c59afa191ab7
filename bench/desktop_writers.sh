#!/usr/bin/env bash
# The desktop app next to running VMs (issue 11), measured on a virtual display:
#   a scratch HOME holding both products' layouts from the fixture crate plus a 40k-file smolvm
#   pack store (gen_shared_home.py), a live smolvm machine's disk and a live Celesto sandbox's
#   disk each held open by a process this script spawns; then
#   - SECONDS (60) with the holders idle: the baseline,
#   - SECONDS with each holder writing 4 KiB every 50 ms (pwrite at a moving offset, what a VM
#     does to its disk),
#   and for both: the app's CPU (utime+stime of the app and its descendants over wall time),
#   Private_Dirty summed with RSS beside it, the load average, and the scans the app ran.
#
# Counting scans: the app logs nothing per scan; with RUST_LOG=smolsweep_desktop=debug the
# watcher logs "a finding may have changed: rescanning" each time it wakes the scan loop. The
# only other wakes are the interval (900 s by default, longer than a phase), a settings change
# and a user's "Rescan now", none of which happens here, so that line counts the scans. As a
# check that the count can be non-zero, an orphan disk is created at the end and the script
# waits for the line (the watcher waits 2 s of quiet before it wakes the scanner).
#
# Usage: bench/desktop_writers.sh [APP_BINARY] [SECONDS]
# Prints a markdown table; writes nothing in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
app=$(realpath "${1:-target/release/smolsweep-desktop}")
secs=${2:-60}
[ -x "$app" ] || { echo "bench: build $app first" >&2; exit 1; }

if [ -z "${SMOLSWEEP_IN_SESSION:-}" ]; then
  export SMOLSWEEP_IN_SESSION=1
  exec xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" dbus-run-session -- "$0" "$app" "$secs"
fi

scratch=$(mktemp -d)
app_pid="" w1="" w2=""
cleanup() {
  for p in $app_pid $w1 $w2; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# SMOLSWEEP_FIXTURE_BIN: a fixture binary already built (skips the build, e.g. while another
# build holds the target directory).
fixture=${SMOLSWEEP_FIXTURE_BIN:-}
if [ -z "$fixture" ]; then
  cargo build -q -p smolsweep-fixtures --bin smolsweep-fixture
  fixture=target/debug/smolsweep-fixture
fi
mkdir -p "$scratch/fx"
mapfile -t fenv < <("$fixture" both "$scratch/fx")
home=""
for kv in "${fenv[@]}"; do [ "${kv%%=*}" = HOME ] && home=${kv#HOME=}; done
[ -n "$home" ] || { echo "bench: the fixture gave no HOME" >&2; exit 1; }
nfiles=$(python3 bench/gen_shared_home.py "$home" 40000)

machine_disk=$(ls "$home"/.local/share/smolvm/vms/*/storage.raw | head -1)
sandbox_disk=$home/.local/state/celesto/disks/vm-abc123.qcow2
[ -f "$machine_disk" ] && [ -f "$sandbox_disk" ] || { echo "bench: fixture layout changed" >&2; exit 1; }

# A holder: opens the disk read-write, says ready, waits for SIGUSR1, then writes 4 KiB every
# 50 ms for SECONDS, reports how many writes it made, and keeps the disk open until killed.
holder() {
  python3 - "$1" "$secs" "$2" <<'PY' &
import os, signal, sys, time
path, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_RDWR)
go = []
signal.signal(signal.SIGUSR1, lambda *_: go.append(1))
open(out, "w").write("ready\n")
while not go:
    signal.pause()
buf = os.urandom(4096)
n, end, nxt = 0, time.monotonic() + secs, time.monotonic()
while time.monotonic() < end:
    os.pwrite(fd, buf, (n % 256) * 4096)
    n += 1
    nxt += 0.05
    time.sleep(max(0, nxt - time.monotonic()))
open(out, "w").write(f"{n}\n")
while True:
    signal.pause()
PY
}
holder "$machine_disk" "$scratch/w1.out"; w1=$!
holder "$sandbox_disk" "$scratch/w2.out"; w2=$!
for _ in $(seq 1 200); do [ -s "$scratch/w1.out" ] && [ -s "$scratch/w2.out" ] && break; sleep 0.05; done

# shellcheck source=bench/proc_cost.sh
source bench/proc_cost.sh
rescans() { grep -c "a finding may have changed: rescanning" "$scratch/app.log" || true; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

hz=$(getconf CLK_TCK)
env -i PATH=/usr/bin:/bin DISPLAY="$DISPLAY" XAUTHORITY="${XAUTHORITY:-}" DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS" \
  "${fenv[@]}" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share" XDG_CACHE_HOME="$home/.cache" \
  RUST_LOG=smolsweep=info,smolsweep_desktop=debug "$app" >"$scratch/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 1 1500); do
  grep -q "first menu with scan results" "$scratch/app.log" && break
  sleep 0.02
done
grep -q "first menu with scan results" "$scratch/app.log" || { echo "bench: no first menu" >&2; cat "$scratch/app.log" >&2; exit 1; }
sleep 10 # let start-up work settle

phase() { # prints "processes cpu% private_dirty_MB rss_MB scans load1 load5 load15"
  local pids t0 t1 r0 r1 m cpu
  pids=$(descendants "$app_pid" | sort -u)
  r0=$(rescans)
  # shellcheck disable=SC2086
  t0=$(ticks $pids)
  [ "$1" = writers ] && kill -USR1 "$w1" "$w2"
  sleep "$secs"
  # shellcheck disable=SC2086
  t1=$(ticks $pids)
  r1=$(rescans)
  # shellcheck disable=SC2086
  m=$(mem $pids)
  cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$secs" 'BEGIN {printf "%.3f", 100 * d / hz / s}')
  # shellcheck disable=SC2086
  set -- $m
  awk -v pd="$1" -v rss="$2" -v n="$3" -v cpu="$cpu" -v sc=$((r1 - r0)) -v ld="$(load)" \
    'BEGIN {printf "%d %s %.1f %.1f %d %s\n", n, cpu, pd / 1024, rss / 1024, sc, ld}'
}

base=$(phase idle)
sleep 3 # the writers' 60 s end; let the last events arrive
writers=$(phase writers)
sleep 3
n1=$(cat "$scratch/w1.out") n2=$(cat "$scratch/w2.out")
kill "$w1" "$w2" 2>/dev/null || true

# The count can move: a new orphan disk must produce a rescan.
r0=$(rescans)
head -c 65536 /dev/zero >"$home/.local/state/celesto/disks/bench-orphan.ext4"
seen=no
for _ in $(seq 1 150); do [ "$(rescans)" -gt "$r0" ] && { seen=yes; break; }; sleep 0.1; done

echo "binary: $app ($(nproc) cores, $(date -u +%Y-%m-%d)); pack store: $nfiles files"
echo "machine disk: ${machine_disk#"$home"/}, sandbox disk: ${sandbox_disk#"$home"/}"
echo "writes made: $n1 and $n2 (expected ≈ $((secs * 20)) each); rescan after a new orphan disk: $seen"
echo
echo "| phase | processes | CPU (of one core) | Private_Dirty | RSS | scans | load average (1/5/15 min, at the end) |"
echo "|---|---|---|---|---|---|---|"
read -r n cpu pd rss sc l1 l5 l15 <<<"$base"
echo "| no writes (baseline), ${secs} s | $n | $cpu % | $pd MB | $rss MB | $sc | $l1 $l5 $l15 |"
read -r n cpu pd rss sc l1 l5 l15 <<<"$writers"
echo "| two writers, 4 KiB / 50 ms each, ${secs} s | $n | $cpu % | $pd MB | $rss MB | $sc | $l1 $l5 $l15 |"
