#!/usr/bin/env bash
# Build the .deb (offline): the tray app, the `smolsweep` CLI in /usr/bin, a desktop entry and
# icons. Needs the packages from scripts/setup/50-desktop.sh. Output:
#   target/release/bundle/deb/Smolsweep_<version>_<arch>.deb
set -euo pipefail
cd "$(dirname "$0")"
[ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --silent
# The CLI goes into the package next to the app (bundle.linux.deb.files in tauri.conf.json).
cargo build --release --locked -p smolsweep --bin smolsweep
cd ../src-tauri
exec ../packaging/node_modules/.bin/tauri build --bundles deb "$@"
