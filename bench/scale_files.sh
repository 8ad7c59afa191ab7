#!/usr/bin/env bash
# Scale figure 1 (bench/SCALE.md): `smolsweep scan --json` of a HOME of about 1,000,000 files of
# SmolVM state (gen_scale_home.py: pack stores, layer caches, blob cache, machine dirs with
# sparse disks, Celesto image caches and sandbox disks) against `du -s -B1` of the same HOME:
# wall, CPU and peak memory (RSS and Private_Dirty), warm cache, and cold-ish cache.
#
# usage: bench/scale_files.sh [--files N] [--runs N] [--cold-runs N] [--keep]
#
#   --files N      files in the HOME (default 1000000)
#   --runs N       warm pairs, alternating scan and du, after one warm-up each (default 7)
#   --cold-runs N  cold-ish pairs (default 3; needs root for the loop mount, else 0)
#
# The HOME is built on its own ext4 file system in a sparse image under a mktemp -d scratch dir,
# loop-mounted with direct I/O, so "cold-ish" can mean: unmount and mount that file system
# before each cold run, which drops its dentries, inodes, metadata buffers and page cache and
# nothing else on the machine (the backing file is read with O_DIRECT, so what the disk below
# caches is all that is left warm). As root the warm figures are taken on that file system too;
# without root the HOME is a plain directory and only warm figures are taken. Everything is
# removed afterwards unless --keep.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=1000000
runs=7
cold=3
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --cold-runs) cold="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
loop=0
[ "$(id -u)" = 0 ] && loop=1 || cold=0

scan="$repo/target/release/smolsweep"
measure="$repo/target/release/examples/measure"
if [ ! -x "$scan" ] || [ ! -x "$measure" ]; then
  (cd "$repo" && cargo build --release -p smolsweep --bin smolsweep --example measure >&2)
fi
rootfs=$(ls -d "$repo"/.tools/smolmachines-*/agent-rootfs 2>/dev/null | head -1 || true)

scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-scale.XXXXXX")"
mnt="$scratch/mnt"
dev=""
cleanup() {
  if [ "$keep" = 1 ]; then echo "HOME kept at $home (file system: $dev on $mnt)" >&2; return; fi
  if [ -n "$dev" ]; then umount "$mnt" 2>/dev/null || true; losetup -d "$dev" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
if [ "$loop" = 1 ]; then
  # 4 KiB per file is plenty (most are < 6 KB), plus the sparse disks' written MiBs.
  truncate -s $(( files * 6 / 1000 + 4000 ))M "$scratch/fs.img"
  mkfs.ext4 -q -N $(( files * 13 / 10 + 100000 )) "$scratch/fs.img"
  dev=$(losetup -f --show --direct-io=on "$scratch/fs.img")
  mkdir "$mnt"
  mount "$dev" "$mnt"
  home="$mnt/home"
else
  home="$scratch/home"
fi
echo "generating $files files in $home ..." >&2
t0=$(date +%s)
python3 "$here/gen_scale_home.py" "$home" "$files" ${rootfs:+--agent-rootfs "$rootfs"} >"$scratch/made"
echo "generated $(cat "$scratch/made") files in $(( $(date +%s) - t0 )) s" >&2

# Correctness first: the walk's allocated bytes equal du's; what the scan reports.
du_bytes=$(du -s -B1 "$home" | cut -f1)
ours=$("$measure" "$home" | sed -n 's/.*allocated=\([0-9]*\).*/\1/p' | tail -n1)
if [ "$ours" != "$du_bytes" ]; then
  echo "MISMATCH: du says $du_bytes allocated bytes, measure says $ours" >&2
  exit 1
fi
env -i HOME="$home" PATH=/usr/bin:/bin "$scan" scan --json >"$scratch/scan.json"
python3 - "$scratch/scan.json" <<'PY'
import collections, json, sys
r = json.load(open(sys.argv[1]))
k = collections.Counter(f["kind"] for f in r["findings"])
total = sum(f["allocated_bytes"] for f in r["findings"])
print(f"the scan reports {len(r['findings'])} findings, {total} allocated bytes in them: "
      + ", ".join(f"{n} {kind}" for kind, n in k.most_common()))
PY
echo "allocated bytes under HOME agree with du: $du_bytes"
echo "entries under HOME: $(find "$home" | wc -l), regular files: $(cat "$scratch/made")"
echo "cores: $(nproc), file system: $(if [ -n "$dev" ]; then echo "ext4 on $dev (loop, direct I/O)"; else df -T "$home" | awk 'NR==2 {print $2}'; fi)"

a="env -i HOME=$home PATH=/usr/bin:/bin $scan scan --json"
b="du -s -B1 $home"
echo "== warm cache: $runs pairs"
python3 "$here/runstat.py" pair --runs "$runs" --a "$a" --b "$b" --a-name scan --b-name du
if [ "$cold" -gt 0 ]; then
  echo "== cold-ish cache (file system remounted before every run): $cold pairs"
  remount="sh -c 'sync; umount $mnt && mount $dev $mnt'"
  python3 "$here/runstat.py" pair --runs "$cold" --warmup 0 --a "$a" --b "$b" --a-name scan \
    --b-name du --before-a "$remount" --before-b "$remount"
fi
