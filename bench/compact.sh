#!/usr/bin/env bash
# Cost of the compaction estimate per disk (issue 32), with public means only.
#
# Two scratch HOMEs laid out by the fixture crate (`smolsweep-fixture both`: both products' edge
# cases). In A, every disk the scan estimates (disks of stopped machines and sandboxes, saved
# disks) is replaced by a real 2 GiB ext4 image with 512 MiB written and then deleted (`mke2fs
# -d`, `debugfs -w -R rm`): raw for `.ext4`/`.raw`, `qemu-img convert -O qcow2` for `.qcow2`. In
# B they stay the fixture's sparse files, which hold no file system (the estimate stops after
# reading the superblock). bench/runstat.py times `smolsweep scan --json` of each, pairwise; a
# new process each run, so every estimate is read cold (the cache lives in one process).
# (median A - median B) / disks = the estimate's cost per disk. Bytes read per disk come from
# the report (`compact.disks[].read_bytes`).
#
# Then compaction against `qemu-img convert` on a 2 GiB disk with 1 GiB written and deleted, raw
# and qcow2: `smolsweep compact DISK -y` (in place) vs `qemu-img convert -O <same format>` to a
# new file, timed by bench/compact_vs_convert.py, which samples the allocated bytes of the disk
# and of the new file (peak extra space) every 5 ms. The disk is named by its sandbox: a process
# naming it among its arguments (this script's timer) would be one using it.
#
# Usage: bench/compact.sh [RUNS] [SMOLSWEEP] [FIXTURE]
#   defaults: 15 runs, target/debug/smolsweep, target/debug/smolsweep-fixture
#   (`cargo build -p smolsweep -p smolsweep-fixtures`). Needs e2fsprogs and qemu-utils.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-15}
bin=$(realpath "${2:-target/debug/smolsweep}")
fixture=$(realpath "${3:-target/debug/smolsweep-fixture}")
PATH=$PATH:/usr/sbin:/sbin
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# One 2 GiB ext4 image with 512 MiB written and deleted, and its qcow2 conversion.
mkdir "$scratch/src"
head -c $((512 << 20)) /dev/urandom > "$scratch/src/big"
mke2fs -q -F -t ext4 -d "$scratch/src" "$scratch/disk.raw" 2G
debugfs -w -R 'rm /big' "$scratch/disk.raw" >/dev/null 2>&1
qemu-img convert -O qcow2 "$scratch/disk.raw" "$scratch/disk.qcow2"

for side in a b; do
  mkdir -p "$scratch/$side"
  "$fixture" both "$scratch/$side" > "$scratch/$side.env"
done
envfile() { sed 's/^/export /' "$scratch/$1.env"; }

# The disks the scan estimates in B (the same paths exist in A).
disks=$(env -i PATH=/usr/bin:/bin $(cat "$scratch/b.env") "$bin" scan --json \
  | python3 -c 'import json,sys; [print(d["path"]) for d in json.load(sys.stdin)["compact"]["disks"]]')
n=$(printf '%s\n' "$disks" | grep -c .)
for p in $disks; do
  a=${p/#$scratch\/b/$scratch\/a}
  case "$p" in
    *.qcow2) cp --sparse=always "$scratch/disk.qcow2" "$a" ;;
    *) cp --sparse=always "$scratch/disk.raw" "$a" ;;
  esac
  touch -d '2 hours ago' "$a"
done

report=$(env -i PATH=/usr/bin:/bin $(cat "$scratch/a.env") "$bin" scan --json)
printf '%s' "$report" > "$scratch/a.json"
python3 - "$scratch/a.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["compact"]
known = [d for d in c["disks"] if "cannot_tell" not in d]
print("A: %d disks estimated, %d read exactly, compactable %d bytes"
      % (len(c["disks"]), len(known), c["compactable_bytes"]))
for d in c["disks"]:
    print("  %-6s read %8d B  compactable %11d  %s"
          % (d["format"], d["read_bytes"], d["compactable_bytes"], d.get("cannot_tell", "")))
PY
echo "disks per HOME: $n"
python3 bench/runstat.py pair --runs "$runs" \
  --a "env -i PATH=/usr/bin:/bin $(tr '\n' ' ' < "$scratch/a.env") $bin scan --json" \
  --b "env -i PATH=/usr/bin:/bin $(tr '\n' ' ' < "$scratch/b.env") $bin scan --json" \
  --a-name real-ext4 --b-name no-fs

# Compaction vs qemu-img convert, one 2 GiB disk with 1 GiB written and deleted.
rm -rf "$scratch/src"; mkdir "$scratch/src"
head -c $((1 << 30)) /dev/urandom > "$scratch/src/big"
mke2fs -q -F -t ext4 -d "$scratch/src" "$scratch/big.raw" 2G
rm -rf "$scratch/src"
debugfs -w -R 'rm /big' "$scratch/big.raw" >/dev/null 2>&1
qemu-img convert -O qcow2 "$scratch/big.raw" "$scratch/big.qcow2"
home_a=$(sed -n 's/^HOME=//p' "$scratch/a.env")
for fmt in raw qcow2; do
  # The stopped Celesto sandbox's disk of HOME A (stopped1.ext4 / vm-abc123.qcow2).
  case $fmt in
    raw) disk=$(printf '%s\n' $disks | grep 'stopped1.ext4' | head -1) ;;
    qcow2) disk=$(printf '%s\n' $disks | grep 'vm-abc123.qcow2' | head -1) ;;
  esac
  disk=${disk/#$scratch\/b/$scratch\/a}
  cp --sparse=always "$scratch/big.$fmt" "$disk"
  touch -d '2 hours ago' "$disk"
  echo "$fmt convert:"
  WATCH_IN_PLACE="$scratch/big.$fmt" WATCH_NEW="$scratch/converted.$fmt" \
    python3 bench/compact_vs_convert.py qemu-img convert -O "$fmt" "$scratch/big.$fmt" "$scratch/converted.$fmt"
  rm -f "$scratch/converted.$fmt"
  echo "$fmt compact:"
  WATCH_IN_PLACE="$disk" python3 bench/compact_vs_convert.py \
    env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin SMOLSWEEP_DATA_DIR="$scratch/data" $(cat "$scratch/a.env") \
    "$bin" compact "celesto:$(basename "${disk%.*}")" -y
done
