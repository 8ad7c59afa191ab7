#!/usr/bin/env bash
# Display-server tests of the desktop app: the real tray menu over D-Bus (dbusmenu), real
# notifications through dunst, and the real window through WebDriver (tauri-driver +
# WebKitWebDriver). Runs the `#[ignore]`d tests of src-tauri/tests/display.rs and
# src-tauri/tests/webdriver.rs under Xvfb and a private session bus; screenshots go to
# docs/screenshots/.
#
# Called by scripts/test.sh after `cargo test --workspace` (which built the app and the tests);
# can be run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export SMOLSWEEP_REPO="$PWD"

if [ -z "${SMOLSWEEP_IN_SESSION:-}" ]; then
  for t in xvfb-run dbus-run-session dunst dunstctl gdbus xdotool import tauri-driver WebKitWebDriver; do
    command -v "$t" >/dev/null || { echo "desktop-tests: missing $t (run scripts/setup/50-desktop.sh)" >&2; exit 1; }
  done
  # Build exactly what `cargo test --workspace` builds, so nothing is rebuilt.
  cargo test --workspace --no-run -q
  mkdir -p docs/screenshots target/desktop-tests
  export SMOLSWEEP_IN_SESSION=1
  exec xvfb-run -a -s "-screen 0 1280x800x24 -nolisten tcp" dbus-run-session -- "$0" "$@"
fi

# Inside the virtual display and the private session bus.
log=target/desktop-tests
dunst >"$log/dunst.log" 2>&1 &
dunst_pid=$!
trap 'kill $dunst_pid 2>/dev/null || true' EXIT
gdbus wait --session --timeout 10 org.freedesktop.Notifications

export SMOLSWEEP_SCREENSHOTS="$PWD/docs/screenshots"
cargo test --workspace -q --test display --test webdriver -- --ignored --test-threads=1 "$@"
