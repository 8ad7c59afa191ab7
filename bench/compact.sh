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
