#!/usr/bin/env bash
# macOS builds.
#
#   packaging/macos/build-macos.sh cli   (on Linux) the CLI as Mach-O executables through
#       cargo-zigbuild (scripts/setup/70-apple.sh installs the toolchain):
#       target/apple/macos/smolsweep-aarch64-apple-darwin   Mach-O arm64
#       target/apple/macos/smolsweep-x86_64-apple-darwin    Mach-O x86_64
#       target/apple/macos/smolsweep                        universal (both), joined by llvm-lipo
#       target/apple/macos/smolsweep-<version>-macos-universal.tar.gz   what the formula installs
#     and a copy of each in src-tauri/binaries/ (the app bundle's externalBin).
#     SMOLSWEEP_MACOS_PROFILE=dev builds the dev profile instead of release (CI: proves the link).
#
#   packaging/macos/build-macos.sh app   (on a Mac with Xcode's SDK) the universal app bundle and
#       DMG through the Tauri CLI (Smolsweep_<version>_universal.dmg, what the cask installs).
#
# The menu-bar behaviour comes from: Info.plist LSUIElement (src-tauri/Info.plist, merged by
# the bundler), the Accessory activation policy set at start (src-tauri/src/lib.rs), and a
# template tray icon (icons/tray-template.png).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SMOLSWEEP_REPO="$PWD"
targets=(aarch64-apple-darwin x86_64-apple-darwin)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

cli() {
  # shellcheck source=scripts/apple-env.sh
  source scripts/apple-env.sh
  local profile=${SMOLSWEEP_MACOS_PROFILE:-release} dir=release flags=(--release)
  if [ "$profile" = dev ]; then dir=debug flags=(); fi
  # No strip (apple-env.sh turns it off: rust-objcopy is not in Debian's toolchain), and none
  # afterwards either: zig signs the arm64 executable ad hoc (macOS runs no unsigned arm64
  # code) and stripping would void that signature. rustc's warning that `xcrun` is missing is
  # expected: zig brings the SDK stubs.
  apple_cargo zigbuild "${flags[@]}" -p smolsweep --bin smolsweep
  local out=$CARGO_TARGET_DIR/macos t
  mkdir -p "$out" src-tauri/binaries
  for t in "${targets[@]}"; do
    # -p: an unchanged binary keeps its time, so the desktop crate's build script (which
    # watches its externalBin) does not run again.
    cp -p "$CARGO_TARGET_DIR/$t/$dir/smolsweep" "$out/smolsweep-$t"
    cp -p "$out/smolsweep-$t" "src-tauri/binaries/smolsweep-$t"
    file "$out/smolsweep-$t"
  done
  local lipo
  lipo=$(command -v llvm-lipo || ls /usr/bin/llvm-lipo-* 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$lipo" ]; then
    "$lipo" -create -output "$out/smolsweep" "$out/smolsweep-${targets[0]}" "$out/smolsweep-${targets[1]}"
    file "$out/smolsweep"
    # The bundler's externalBin for `--target universal-apple-darwin`.
    cp -p "$out/smolsweep" src-tauri/binaries/smolsweep-universal-apple-darwin
    tar -C "$out" -czf "$out/smolsweep-$version-macos-universal.tar.gz" smolsweep
  else
    echo "build-macos: no llvm-lipo (Debian's llvm): no universal binary" >&2
  fi
}

app() {
  [ "$(uname -s)" = Darwin ] || { echo "build-macos: the app bundle needs a Mac (Apple's SDK)" >&2; exit 1; }
  (cd packaging && { [ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --silent; })
  rustup target add "${targets[@]}"
  for t in "${targets[@]}"; do
    cargo build --release --locked -p smolsweep --bin smolsweep --target "$t"
    mkdir -p src-tauri/binaries
    cp "target/$t/release/smolsweep" "src-tauri/binaries/smolsweep-$t"
  done
  lipo -create -output src-tauri/binaries/smolsweep-universal-apple-darwin \
    "${targets[@]/#/src-tauri/binaries/smolsweep-}"
  cd src-tauri
  # tauri.macos.conf.json is merged automatically on macOS.
  exec ../packaging/node_modules/.bin/tauri build --target universal-apple-darwin --bundles app,dmg "$@"
}

case "${1:-}" in
  cli) cli ;;
  app) shift; app "$@" ;;
  *) echo "usage: $0 cli|app" >&2; exit 2 ;;
esac
