#!/usr/bin/env bash
# `smolsweep scan --json` vs `celesto sandbox prune --dry-run --json` (celesto 0.1.10) on a
# typical Celesto tree: the fixture catalogue of celesto-smolvm.md §12.5 (about 80 paths, both
# inventories, image caches). Each celesto run gets a fresh copy of the data dir (its dry run
# writes the database). Warm cache; runs alternate. Goal: smolsweep >= 20x faster.
#
# When strace is there, the script first counts the processes one scan starts (issue 40: a scan
# that estimates nothing compactable is to run no tool, not even for its version).
#
# usage: bench/scan_vs_celesto.sh [--runs N] [--bin PATH]...   (needs scripts/setup/20-real-tools.sh)
#   --bin: measure these builds (each against its own celesto runs) instead of building
#   target/release/smolsweep.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs=9
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --bin) bins+=("$(realpath "$2")"); shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
export SMOLSWEEP_REPO="$repo"
# shellcheck source=/dev/null
source "$repo/scripts/setup/20-real-tools.sh" >/dev/null
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$repo" && cargo build --release -q -p smolsweep --bin smolsweep)
  bins=("$repo/target/release/smolsweep")
fi
[ -x "$repo/target/release/smolsweep-fixture" ] ||
  (cd "$repo" && cargo build --release -q -p smolsweep-fixtures --bin smolsweep-fixture)
echo "cores: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir "$T/tree" && "$repo/target/release/smolsweep-fixture" celesto "$T/tree" >/dev/null
home="$T/tree/home"
data="$home/.local/state/celesto"
venv_bin="$(dirname "$SMOLSWEEP_CELESTO_BIN")"
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
ours() { env -i HOME="$home" SMOLSWEEP_SOCKET_DIR="$T/tree/tmp" PATH="$venv_bin:/usr/bin:/bin" "$bin" scan --json; }
theirs() {
  rm -rf "$T/copy" && mkdir -m 700 "$T/copy" && cp -a "$data" "$T/copy/state"
  env -i HOME="$T/copy" PATH="$venv_bin:/usr/bin:/bin" CELESTO_DATA_DIR="$T/copy/state" \
    CELESTO_IMAGE_DIR="$home/.celesto/images" CELESTO_NO_TELEMETRY=1 DO_NOT_TRACK=1 \
    CELESTO_DISABLE_VERSION_CHECK=1 CELESTO_NO_KVM_REEXEC=1 \
    "$SMOLSWEEP_CELESTO_BIN" sandbox prune --dry-run --json </dev/null
}
copy_only() { rm -rf "$T/copy" && mkdir -m 700 "$T/copy" && cp -a "$data" "$T/copy/state"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
for bin in "${bins[@]}"; do
  echo "$bin"
  if command -v strace >/dev/null; then
    strace -f -qq -e trace=execve -o "$T/exec.log" env -i HOME="$home" SMOLSWEEP_SOCKET_DIR="$T/tree/tmp" \
      PATH="$venv_bin:/usr/bin:/bin" "$bin" scan --json >/dev/null 2>&1 || true
    echo "  processes one scan starts (tools): $(( $(grep -c 'execve(' "$T/exec.log") - 2 ))"
  fi
  ours >/dev/null 2>&1; theirs >/dev/null 2>&1
  o=""; t=""; c=""
  for _ in $(seq "$runs"); do
    o+="$(ms ours)"$'\n'; t+="$(ms theirs)"$'\n'; c+="$(ms copy_only)"$'\n'
  done
  om=$(printf '%s' "$o" | median); tm=$(printf '%s' "$t" | median); cm=$(printf '%s' "$c" | median)
  echo "  smolsweep scan --json                 : median ${om} ms over $runs runs"
  echo "  celesto sandbox prune --dry-run --json: median ${tm} ms (of which ${cm} ms is the copy)"
  awk -v o="$om" -v t="$tm" -v c="$cm" 'BEGIN { printf "  speed-up: %.1fx (%.1fx excluding the copy)\n", t / (o > 0 ? o : 1), (t - c) / (o > 0 ? o : 1) }'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
