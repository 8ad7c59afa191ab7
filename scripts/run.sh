#!/usr/bin/env bash
# The main job: install whatever is missing on a fresh Debian/Ubuntu machine, build Smolsweep and
# start its tray app when a graphical session is present (DISPLAY or WAYLAND_DISPLAY); without
# one, scan this HOME (read-only) and say how to start the app. Every step says what it does
# while it does it (the first build takes minutes).
#
#   scripts/run.sh              the tray app (its window opened), or the scan without a display
#   scripts/run.sh ARGS...      `smolsweep scan ARGS` (for example --json), never the app
#   scripts/run.sh --release    the tray app, built optimized (slower to build, faster to scan)
#
# SMOLSWEEP_RUN_PREBUILT=1 uses the binaries already built instead of building, from
# SMOLSWEEP_RUN_BIN_DIR (default target/debug or target/release): the test suite builds them once
# for every test.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'run.sh: %s\n' "$*" >&2; }

profile=debug
scan_args=()
for a in "$@"; do
  case "$a" in
    --release) profile=release ;;
    *) scan_args+=("$a") ;;
  esac
done
cargo_profile=()
[ "$profile" = release ] && cargo_profile=(--release)
bindir=${SMOLSWEEP_RUN_BIN_DIR:-target/$profile}

graphical() { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }
app=$([ ${#scan_args[@]} -eq 0 ] && graphical && echo yes || true)

# Cargo's own progress ("Compiling …", or a bar at a terminal) shows while it builds; the step
# before and after it is said here.
build() {
  [ -n "${SMOLSWEEP_RUN_PREBUILT:-}" ] && return 0
  say "building $1 ($profile; the first build takes several minutes, cargo shows its progress)"
  local start=$SECONDS
  cargo build "${cargo_profile[@]}" --locked "${@:2}"
  say "built $1 in $((SECONDS - start)) s"
}

if [ -z "${SMOLSWEEP_RUN_PREBUILT:-}" ]; then
  say "checking the Rust toolchain"
  # shellcheck source=/dev/null
  source scripts/setup/00-rust.sh
fi

if [ -n "$app" ]; then
  if [ -z "${SMOLSWEEP_RUN_PREBUILT:-}" ]; then
    # What the app needs to build and run (scripts/setup/50-desktop.sh adds the test tools).
    say "checking the desktop libraries (WebKitGTK, the tray's AppIndicator)"
    _smolsweep_apt libwebkit2gtk-4.1-dev libayatana-appindicator3-dev dbus
  fi
  build "the tray app and the CLI" -p smolsweep-desktop -p smolsweep --bin smolsweep-desktop --bin smolsweep
  bin=$bindir/smolsweep-desktop
  say "starting $bin: Smolsweep is in the tray (its menu has every action; Quit ends it), its window opens now"
  exec "$bin" --show
fi

build "the CLI" -p smolsweep --bin smolsweep
if [ ${#scan_args[@]} -eq 0 ]; then
  say "no graphical session here (DISPLAY and WAYLAND_DISPLAY are unset): scanning this HOME instead"
  "$bindir/smolsweep" scan
  say "to use the tray app, run scripts/run.sh in a desktop session, or install the .deb (README: The desktop app)"
  exit 0
fi
exec "$bindir/smolsweep" scan "${scan_args[@]}"
