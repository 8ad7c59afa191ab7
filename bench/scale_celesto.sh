#!/usr/bin/env bash
# Scale figure 2 (bench/SCALE.md): `smolsweep scan --json --product celesto` vs the real
# `celesto sandbox prune --dry-run --json` (celesto 0.1.10) on a Celesto data directory of
# 200 sandboxes with rows in celesto.db and 2,000 disk, companion and log files
# (gen_celesto_state.py, made by the real package's CLI service and SDK manager).
#
# usage: bench/scale_celesto.sh [--runs N] [--keep]      (needs scripts/setup/20-real-tools.sh
#                                                          and qemu-img)
# Each celesto run gets a fresh copy of the data directory, made before the run and not timed
# (its dry run writes the database: reconcile()); both read the same files. Warm cache; one
# warm-up each, then N pairs alternating. `--product celesto` only filters what the scan prints:
# it scans the whole HOME (which holds nothing of smol-machines).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs=7
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
export SMOLSWEEP_REPO="$repo"
# shellcheck source=/dev/null
source "$repo/scripts/setup/20-real-tools.sh" >/dev/null
scan="$repo/target/release/smolsweep"
[ -x "$scan" ] || (cd "$repo" && cargo build --release -q -p smolsweep --bin smolsweep)
venv_bin="$(dirname "$SMOLSWEEP_CELESTO_BIN")"

T="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-celesto.XXXXXX")"
if [ "$keep" = 1 ]; then trap 'echo "kept $T" >&2' EXIT; else trap 'rm -rf "$T"' EXIT; fi
home="$T/home"
data="$home/.local/state/celesto"
images="$home/.celesto/images"
mkdir -m 700 -p "$home" "$home/.local" "$home/.local/state" "$data" "$home/.celesto" "$images"
cel_env=(env -i PATH="$venv_bin:/usr/bin:/bin" CELESTO_NO_TELEMETRY=1 DO_NOT_TRACK=1
  CELESTO_DISABLE_VERSION_CHECK=1 CELESTO_NO_KVM_REEXEC=1 CELESTO_IMAGE_DIR="$images")
"${cel_env[@]}" HOME="$home" CELESTO_DATA_DIR="$data" \
  "$venv_bin/python" "$here/gen_celesto_state.py" "$T"
echo "rows in celesto.db: $(sqlite3 "$data/celesto.db" 'SELECT count(*) FROM vms')" \
  "($(sqlite3 "$data/celesto.db" "SELECT group_concat(n, ' ') FROM (SELECT status || ' ' || count(*) AS n FROM vms GROUP BY status)"))"

ours="env -i HOME=$home PATH=/usr/bin:/bin $scan scan --json --product celesto"
theirs="${cel_env[*]} HOME=$T/copy CELESTO_DATA_DIR=$T/copy/state $SMOLSWEEP_CELESTO_BIN sandbox prune --dry-run --json"
copy="sh -c 'rm -rf $T/copy && mkdir -m 700 $T/copy && cp -a $data $T/copy/state'"

# What each says (the last copy stays for the comparison).
$ours >"$T/ours.json"
eval "$copy"
$theirs </dev/null >"$T/theirs.json" 2>"$T/theirs.err" || true
python3 - "$T/ours.json" "$T/theirs.json" "$data" "$T/copy/state" <<'PY'
import json, sys
ours, theirs = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
data, copy = sys.argv[3], sys.argv[4]
d = theirs["data"]
print(f"celesto: exit {theirs['exit_code']}, would remove {len(d['removed'])} files"
      f" ({d['freed_bytes']} apparent bytes), keeps {len(d['kept'])} saved")
f = [x for x in ours["findings"] if x["product"] == "celesto"]
by = {}
for x in f:
    by.setdefault((x["kind"], x["verdict"]), 0)
    by[(x["kind"], x["verdict"])] += 1
print(f"smolsweep: {len(f)} Celesto findings: "
      + ", ".join(f"{n} {k} {v}" for (k, v), n in sorted(by.items())))
theirs_paths = {x["path"].replace(copy, data) for x in d["removed"]}
ours_rec = {x["path"] for x in f if x["verdict"] == "reclaimable"}
print(f"paths celesto would remove that smolsweep also calls reclaimable: "
      f"{len(theirs_paths & ours_rec)} of {len(theirs_paths)}")
PY

python3 "$here/runstat.py" pair --runs "$runs" --a "$ours" --b "$theirs" \
  --a-name smolsweep --b-name celesto --before-b "$copy"
echo "the copy alone (not timed above):"
python3 "$here/runstat.py" pair --runs 3 --a "$copy" --b "true" --a-name copy --b-name true | tail -7 | head -3
