#!/usr/bin/env bash
# Scale figure 4 (bench/SCALE.md): from starting the desktop app to its tray menu carrying the
# scan's numbers ("Reclaimable: <size>", read over D-Bus from the dbusmenu the app exports, as a
# tray host would), on a HOME of about 100,000 files of SmolVM state (the fixture crate's
# edge-case layouts of both products, inventories included, plus gen_scale_home.py's bulk, aged
# 30 days so its leftovers are reclaimable), under Xvfb and a private session bus.
# The peer: `smolsweep scan --json` of the same HOME by the CLI.
#
# usage: bench/tray_launch.sh [--files N] [--runs N] [--start cold|warm|both] [--app BIN] [--cli BIN]...
#   --files N   files in the HOME (default 100000; 0: the fixture alone)
#   --runs N    launches (default 5) of each start; each round is followed by one run of every --cli
#   --start     cold: no menu saved by an earlier run (the app's tray-menu.json removed first);
#               warm: the menu the run before saved is there (issue 40: the first menu shows
#               its numbers, marked as from when, while the fresh scan runs); both (default):
#               a cold and a warm launch in every round
#   --app BIN   the desktop app (default target/debug/smolsweep-desktop, which
#               `cargo test --workspace --no-run` builds)
#   --cli BIN   a CLI to time as the peer (repeatable; default the `smolsweep` beside the app,
#               i.e. the same build profile, and target/release/smolsweep when it exists)
#
# One launch first is not counted (it starts the session's accessibility bus, which a desktop
# has running). Each launch: a fresh SMOLSWEEP_DATA_DIR (no journal, trend or keep file from an
# earlier launch), the same HOME (warm cache), `env -i` with only the fixture's HOME, TMPDIR and
# SMOLSWEEP_SOCKET_DIR, PATH and the display and bus variables; the CLI gets the same.
# The clock starts just before the fork. Every 20 ms the bus names not yet known to belong to
# another process are asked for their PID until the app's appears and its menu object is found,
# then one `gdbus call ... GetLayout` a poll. At the first menu with a number the app's CPU time
# so far (utime + stime from /proc/<pid>/stat) and its Private_Dirty are read; the app's own log
# line ("first menu with scan results after N ms", measured from its `main`, so without the
# loader's work before it) is kept beside the outside figure. Then the app gets SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
files=100000
runs=5
starts=(cold warm)
app=target/debug/smolsweep-desktop
clis=()
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --start) case "$2" in both) starts=(cold warm) ;; *) starts=("$2") ;; esac; shift 2 ;;
    --app) app="$2"; shift 2 ;;
    --cli) clis+=("$2"); shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
app=$(realpath "$app")
[ -x "$app" ] || { echo "bench: build $app first (cargo test --workspace --no-run)" >&2; exit 1; }
if [ ${#clis[@]} -eq 0 ]; then
  clis=("$(dirname "$app")/smolsweep")
  [ -x target/release/smolsweep ] && [ "${clis[0]}" != "$repo/target/release/smolsweep" ] &&
    clis+=("$repo/target/release/smolsweep")
fi

if [ -z "${SMOLSWEEP_IN_SESSION:-}" ]; then
  for t in xvfb-run dbus-run-session gdbus; do
    command -v "$t" >/dev/null || { echo "bench: missing $t (scripts/setup/50-desktop.sh)" >&2; exit 1; }
  done
  export SMOLSWEEP_IN_SESSION=1
  exec xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" dbus-run-session -- "$0" "${args[@]}"
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-tray.XXXXXX")
app_pid=""
trap '[ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
# Both products' edge-case layouts from the fixture crate (inventories included, so leftovers
# can be told from live state), then the bulk of the files, dated 30 days back.
fixture=$(dirname "$app")/smolsweep-fixture
[ -x "$fixture" ] || { echo "bench: build $fixture first (cargo test --workspace --no-run)" >&2; exit 1; }
mkdir "$scratch/fx"
mapfile -t fenv < <("$fixture" both "$scratch/fx")
home=""
for kv in "${fenv[@]}"; do [ "${kv%%=*}" = HOME ] && home=${kv#HOME=}; done
[ -n "$home" ] && [ -d "$home" ] || { echo "bench: the fixture made no HOME" >&2; exit 1; }
rootfs=$(ls -d "$repo"/.tools/smolmachines-*/agent-rootfs 2>/dev/null | head -1 || true)
echo "generating $files files in $home ..." >&2
touch "$scratch/marker"
if [ "$files" -gt 0 ]; then
  python3 bench/gen_scale_home.py "$home" "$files" ${rootfs:+--agent-rootfs "$rootfs"} >"$scratch/made"
else
  echo 0 >"$scratch/made" # --files 0: the fixture alone, for the app's fixed start-up cost
fi
find "$home" -newer "$scratch/marker" -exec touch -h -d "@$(( $(date +%s) - 30 * 86400 ))" {} +
echo "HOME: fixture + $(cat "$scratch/made") generated regular files, $(find "$home" | wc -l) entries"

declare -A other # bus names known not to be the app's (unique names are never reused)
menu_path() { # "BUS PATH" of the app's dbusmenu, or nothing yet
  local n node
  for n in $(gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
      --method org.freedesktop.DBus.ListNames | grep -o "':1\.[0-9]*'" | tr -d "'"); do
    [ -z "${other[$n]:-}" ] || continue
    if ! gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
        --method org.freedesktop.DBus.GetConnectionUnixProcessID "$n" 2>/dev/null |
        grep -q "uint32 $app_pid,"; then
      other[$n]=1
      continue
    fi
    node=$(gdbus introspect --session --dest "$n" --object-path /org/ayatana/NotificationItem 2>/dev/null |
      awk '$1 == "node" && $2 !~ /^\// {print $2; exit}')
    [ -n "$node" ] && { echo "$n /org/ayatana/NotificationItem/$node/Menu"; return; }
  done
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
dirty() { awk '/^Private_Dirty:/ {print $2}' "/proc/$1/smaps_rollup"; }
scan_line() { # the CLI's own answer: "Reclaimable: <size>" as the tray would say it
  env -i "${fenv[@]}" PATH=/usr/bin:/bin "$1" scan -q 2>/dev/null | head -1
}
echo "the CLI says: $(scan_line "${clis[0]}")"
# The app's own data directory (Tauri's, below the HOME), where it saves the last scan's menu.
saved_menu="$home/.local/share/dev.smolsweep.desktop/tray-menu.json"

launch_once() { # ID [cold|warm]: prints "outside_ms app_logged_ms cpu_ms private_dirty_kb found_ms status"
  local data=$scratch/data-$1 log=$scratch/app-$1.log start mp="" found=""
  mkdir -p "$data"
  case "${2:-warm}" in
    cold) rm -f "$saved_menu" ;;
    warm) [ -f "$saved_menu" ] || { echo "bench: no saved menu for a warm start" >&2; exit 1; } ;;
  esac
  start=$(date +%s%N)
  env -i "${fenv[@]}" PATH=/usr/bin:/bin DISPLAY="$DISPLAY" XAUTHORITY="${XAUTHORITY:-}" \
    DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS" SMOLSWEEP_DATA_DIR="$data" \
    "$app" >/dev/null 2>"$log" &
  app_pid=$!
  local seen="" line
  for _ in $(seq 1 1500); do
    if [ -z "$mp" ]; then
      mp=$(menu_path || true)
      [ -n "$mp" ] && found=$((($(date +%s%N) - start) / 1000000))
    fi
    if [ -n "$mp" ]; then
      # shellcheck disable=SC2086
      line=$(gdbus call --session --dest ${mp% *} --object-path ${mp#* } \
        --method com.canonical.dbusmenu.GetLayout -- 0 -1 '[]' 2>/dev/null |
        grep -o "Reclaimable: [0-9][^'\"]*" | head -1 || true)
      if [ -n "$line" ]; then
        seen=$((($(date +%s%N) - start) / 1000000))
        break
      fi
    fi
    sleep 0.02
  done
  [ -n "$seen" ] || { echo "bench: no menu with a number" >&2; cat "$log" >&2; exit 1; }
  local cpu pd
  cpu=$(( $(ticks "$app_pid") * 1000 / hz ))
  pd=$(dirty "$app_pid")
  # A cold start saves the menu the warm start after it shows (just after its first scan).
  [ "${2:-warm}" = cold ] && for _ in $(seq 1 100); do [ -f "$saved_menu" ] && break; sleep 0.1; done
  kill "$app_pid"
  wait "$app_pid" 2>/dev/null || true
  app_pid=""
  local logged
  logged=$(grep -o "first menu with \(scan results\|the last scan's numbers\) after [0-9]* ms" "$log" |
    grep -o "[0-9]* ms" | grep -o "[0-9]*" | head -1)
  echo "$seen ${logged:-?} $cpu $pd $found $line"
}

# One launch not counted: it starts the session's accessibility bus, as a desktop has running;
# it also saves the menu a warm start shows (waited for: the app saves it after the first scan).
launch_once 0 cold >/dev/null
if [ ! -f "$saved_menu" ]; then # the app was ended before it saved its menu: let one run save it
  env -i "${fenv[@]}" PATH=/usr/bin:/bin DISPLAY="$DISPLAY" XAUTHORITY="${XAUTHORITY:-}" \
    DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS" SMOLSWEEP_DATA_DIR="$scratch/data-save" \
    "$app" >/dev/null 2>&1 &
  app_pid=$!
  for _ in $(seq 1 600); do [ -f "$saved_menu" ] && break; sleep 0.1; done
  kill "$app_pid"; wait "$app_pid" 2>/dev/null || true; app_pid=""
  [ -f "$saved_menu" ] || { echo "bench: the app saved no menu" >&2; exit 1; }
fi
declare -A results
declare -A cli_t
for i in $(seq 1 "$runs"); do
  for mode in "${starts[@]}"; do
    # A warm start needs the menu the launch before saved (saved just after its first scan).
    [ "$mode" = warm ] && for _ in $(seq 1 50); do [ -f "$saved_menu" ] && break; sleep 0.1; done
    r=$(launch_once "$i-$mode" "$mode")
    results[$mode]+="$r"$'\n'
    echo "launch $i ($mode): menu with a number after ${r%% *} ms (app's log: $(echo "$r" | cut -d' ' -f2) ms," \
      "CPU $(echo "$r" | cut -d' ' -f3) ms, Private_Dirty $(echo "$r" | cut -d' ' -f4) KB," \
      "menu object found after $(echo "$r" | cut -d' ' -f5) ms): $(echo "$r" | cut -d' ' -f6-)" \
      "(load $(cut -d' ' -f1-3 /proc/loadavg))"
  done
  for c in "${clis[@]}"; do
    t=$(python3 bench/runstat.py once -- env -i "${fenv[@]}" PATH=/usr/bin:/bin "$c" scan --json)
    cli_t[$c]+="$t"$'\n'
    echo "  $c scan --json: $t"
  done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "app: $app"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in "${starts[@]}"; do
  rows=$(printf '%s' "${results[$mode]}")
  seen_m=$(printf '%s\n' "$rows" | cut -d' ' -f1 | median)
  logged_m=$(printf '%s\n' "$rows" | cut -d' ' -f2 | median)
  cpu_m=$(printf '%s\n' "$rows" | cut -d' ' -f3 | median)
  pd_m=$(printf '%s\n' "$rows" | cut -d' ' -f4 | median)
  echo "$mode start: launch to a menu with a number: median ${seen_m} ms (app's own log ${logged_m} ms), CPU ${cpu_m} ms, Private_Dirty ${pd_m} KB, $runs launches"
  for c in "${clis[@]}"; do
    w=$(printf '%s' "${cli_t[$c]}" | python3 -c 'import json,sys; print(sorted(json.loads(l)["wall_ms"] for l in sys.stdin)[int(sys.argv[1])//2])' "$runs")
    u=$(printf '%s' "${cli_t[$c]}" | python3 -c 'import json,sys; print(sorted(json.loads(l)["cpu_ms"] for l in sys.stdin)[int(sys.argv[1])//2])' "$runs")
    awk -v c="$c" -v w="$w" -v u="$u" -v s="$seen_m" -v cu="$cpu_m" -v m="$mode" \
      'BEGIN {printf "  %s start vs %s scan --json: median wall %.0f ms, CPU %.0f ms; launch/scan: wall %.2f, CPU %.2f\n", m, c, w, u, s / w, cu / u}'
  done
done
