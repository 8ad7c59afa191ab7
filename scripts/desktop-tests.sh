#!/usr/bin/env bash
# Display-server tests of the desktop app: the real tray menu over D-Bus (dbusmenu), real
# notifications through dunst, and the real window through WebDriver (tauri-driver +
# WebKitWebDriver). Runs the `#[ignore]`d tests of
# src-tauri/tests/it/{display,webdriver,window_look,wizard_window,real_scan,real_vm_window}.rs under Xvfb and
# a private session bus; screenshots go to docs/screenshots/. real_vm_window boots a real QEMU
# Celesto sandbox: it needs what scripts/setup/20-real-tools.sh and 30-qemu-vm.sh export
# (scripts/test.sh sources them first), and fails without it.
#
# Also builds the .deb (packaging/build-deb.sh), installs it on this machine and checks the
# installed app's tray menu; SMOLSWEEP_SKIP_DEB=1 leaves that out (the installed-app test then
# fails, so the skip is visible).
#
# Called by scripts/test.sh after `cargo test --workspace` (which built the app and the tests);
# can be run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export SMOLSWEEP_REPO="$PWD"

if [ -z "${SMOLSWEEP_IN_SESSION:-}" ]; then
  for t in xvfb-run dbus-run-session dunst dunstctl gdbus xdotool import trayer tauri-driver WebKitWebDriver; do
    command -v "$t" >/dev/null || { echo "desktop-tests: missing $t (run scripts/setup/50-desktop.sh)" >&2; exit 1; }
  done
  # Build exactly what `cargo test --workspace` builds, so nothing is rebuilt.
  cargo test --workspace --no-run -q
  mkdir -p docs/screenshots target/desktop-tests
  # The .deb (offline), installed on this machine for the installed-app test. It packages the
  # dev-profile build just made (`--debug`): the same bundle and contents check as a release
  # package, without compiling every crate a second time with optimizations.
  if [ -z "${SMOLSWEEP_SKIP_DEB:-}" ]; then
    packaging/build-deb.sh --debug >target/desktop-tests/deb-build.log 2>&1 || { tail -40 target/desktop-tests/deb-build.log >&2; exit 1; }
    deb=$(ls -t target/debug/bundle/deb/*.deb | head -1)
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "./$deb" >/dev/null
    export SMOLSWEEP_INSTALLED_DEB="$PWD/$deb"
  fi
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
# The desktop crate's test binary `it`, its modules display, webdriver, window_look,
# wizard_window, real_scan and real_vm_window. `--workspace` as above, so nothing is rebuilt (`-p smolsweep-desktop`
# resolves features differently); the core crate's `it` runs too and has none of these. A
# test-name filter of the caller's (an argument not starting with `-`) replaces the modules.
filters=(display:: webdriver:: window_look:: wizard_window:: real_scan:: real_vm_window::)
for a in "$@"; do [[ $a == -* ]] || filters=(); done
cargo test --workspace -q --no-fail-fast --test it -- --ignored --test-threads=1 ${filters[@]+"${filters[@]}"} "$@"
