#!/usr/bin/env bash
# Build the macOS bundle and DMG (run on macOS; not built in this repository's Linux CI).
# The menu-bar behaviour comes from: Info.plist LSUIElement (src-tauri/Info.plist, merged by
# the bundler), the Accessory activation policy set at start (src-tauri/src/lib.rs), and a
# template tray icon (icons/tray-template.png).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --silent
rustup target add aarch64-apple-darwin x86_64-apple-darwin
for t in aarch64-apple-darwin x86_64-apple-darwin; do
  cargo build --release --locked -p smolsweep --bin smolsweep --target "$t"
  mkdir -p ../src-tauri/binaries
  cp "../target/$t/release/smolsweep" "../src-tauri/binaries/smolsweep-$t"
done
cd ../src-tauri
# tauri.macos.conf.json is merged automatically on macOS.
exec ../packaging/node_modules/.bin/tauri build --target universal-apple-darwin --bundles app,dmg "$@"
