#!/usr/bin/env bash
# Scale figure 3 (bench/SCALE.md): `smolsweep scan --json --product smolvm` vs the real
# `smolvm machine ls --json` (smolvm 1.32.2 from the smolmachines wheel) on a smolvm state of 50
# machines: records made by the real CLI (`machine create --name`), then each given the machine
# dir a booted machine has (`vms/<hash16>/`: name, sparse storage.raw 20 GiB and overlay.raw
# 10 GiB with a few MiB written, agent.config.json, console logs, vmm-exit.json, vm.lock), half
# of the records marked stopped after a run (state and a dead pid, as the CLI rewrites them);
# the machine dirs are dated 30 days back.
#
# usage: bench/scale_smolvm.sh [--machines N] [--runs N] [--keep]
#                                              (needs scripts/setup/20-real-tools.sh)
# `machine ls` is not read-only (its orphaned-ephemeral sweep deletes records and dirs, and it
# writes the database), so every run of it gets a fresh copy of the state (database and machine
# dirs), made before the run and not timed; the scan reads the original, which is the same.
# Warm cache, one warm-up each, then N pairs alternating.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
machines=50
runs=7
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --machines) machines="$2"; shift 2 ;;
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

T="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-smolvm.XXXXXX")"
if [ "$keep" = 1 ]; then trap 'echo "kept $T" >&2' EXIT; else trap 'rm -rf "$T"' EXIT; fi
# The CLI laid out like a script install (smol-machines-smolvm.md §13.2), outside the HOMEs.
inst="$T/install"
mkdir -p "$inst/lib"
cp "$SMOLSWEEP_SMOL_WHEEL/smol-vmm" "$inst/smolvm-bin"
cp "$SMOLSWEEP_SMOL_WHEEL/libkrun.so" "$SMOLSWEEP_SMOL_WHEEL/libkrunfw.so.5" "$inst/lib/"
cat >"$inst/smolvm" <<'EOF'
#!/usr/bin/env bash
set -e
d="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$d/smolvm-bin" "$@"
EOF
chmod +x "$inst/smolvm"
home="$T/home"
mkdir -p "$home"
smolvm() { env -i HOME="$1" PATH="$inst:/usr/bin:/bin" "$inst/smolvm" "${@:2}"; }

t0=$(date +%s)
for i in $(seq 0 $((machines - 1))); do
  smolvm "$home" machine create --name "$(printf 'machine-%03d' "$i")" --cpus 1 --mem 512 >/dev/null
done
db="$home/.local/share/smolvm/server/smolvm.db"
vms="$home/.cache/smolvm/vms"
python3 - "$db" "$vms" "$machines" <<'PY'
import hashlib, json, os, sqlite3, sys, time
db, vms, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db, timeout=15)
now = int(time.time())
for i in range(n):
    name = f"machine-{i:03d}"
    d = os.path.join(vms, hashlib.sha256(name.encode()).hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "name"), "w").write(name)
    for disk, gib, mib in (("storage.raw", 20, 4), ("overlay.raw", 10, 1)):
        with open(os.path.join(d, disk), "wb") as f:
            f.truncate(gib << 30)
            f.seek(1 << 20)
            f.write(b"d" * (mib << 20))
    open(os.path.join(d, "agent.config.json"), "w").write(json.dumps({"name": name, "cpus": 1}))
    open(os.path.join(d, "agent-console.log"), "w").write("boot\n" * 4000)
    open(os.path.join(d, "workload.log"), "w").write("")
    open(os.path.join(d, "vm.lock"), "w").close()
    if i % 2:
        # Ran and exited: the record a stop leaves (state stopped, the pid of the gone VMM).
        open(os.path.join(d, "vmm-exit.json"), "w").write(json.dumps(
            {"pid": 4194304 + i, "exited_at_unix_ms": now * 1000, "cause": "killed",
             "signal": 15, "signal_name": "SIGTERM"}))
        con.execute("UPDATE vms SET data = CAST(json_set(CAST(data AS TEXT), '$.state', 'stopped',"
                    " '$.pid', NULL) AS BLOB) WHERE name = ?", (name,))
con.commit()
con.close()
# Machine dirs 30 days old, so that no age guard decides anything.
old = time.time() - 30 * 86400
for dp, dns, fns in os.walk(vms):
    for n in dns + fns:
        os.utime(os.path.join(dp, n), (old, old), follow_symlinks=False)
PY
echo "made $machines machines with the real CLI and their dirs in $(( $(date +%s) - t0 )) s;" \
  "records: $(sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM vms')," \
  "dirs: $(find "$vms" -mindepth 1 -maxdepth 1 -type d | wc -l), files: $(find "$vms" -type f | wc -l)"

copy="sh -c 'rm -rf $T/copy && mkdir -p $T/copy/.local/share $T/copy/.cache && cp -a --sparse=always $home/.local/share/smolvm $T/copy/.local/share/ && cp -a --sparse=always $home/.cache/smolvm $T/copy/.cache/'"
ours="env -i HOME=$home PATH=/usr/bin:/bin $scan scan --json --product smolvm"
theirs="env -i HOME=$T/copy PATH=$inst:/usr/bin:/bin $inst/smolvm machine ls --json"

$ours >"$T/ours.json"
eval "$copy"
$theirs >"$T/theirs.json" 2>"$T/theirs.err" || true
python3 - "$T/ours.json" "$T/theirs.json" <<'PY'
import collections, json, sys
ours, theirs = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"machine ls --json: {len(theirs)} machines, states "
      + str(dict(collections.Counter(m["state"] for m in theirs))))
f = [x for x in ours["findings"] if x["product"] == "smolvm"]
m = [x for x in ours.get("machines", []) if x.get("product") == "smolvm"]
print(f"smolsweep: {len(m)} smolvm machines, {len(f)} findings, "
      f"{sum(x['allocated_bytes'] for x in f)} allocated bytes in them: "
      + ", ".join(f"{n} {k}" for k, n in collections.Counter(x['kind'] for x in f).most_common()))
PY

python3 "$here/runstat.py" pair --runs "$runs" --a "$ours" --b "$theirs" \
  --a-name smolsweep --b-name smolvm-ls --before-b "$copy"
echo "the copy alone (not timed above):"
python3 "$here/runstat.py" pair --runs 3 --a "$copy" --b "true" --a-name copy --b-name true | tail -7 | head -3
