# The toolchain that reaches the two Apple targets from Debian (sourced by scripts/apple-check.sh
# and packaging/macos/build-macos.sh; installed by scripts/setup/70-apple.sh):
# * rustup's own toolchain (the one that builds for Linux) with both Apple targets' prebuilt
#   standard library and its clippy-driver; where rustup has not got those targets, Debian's
#   rustc-web and cargo-web (1.96) with rust-web-src and rust-web-clippy, which build the
#   standard library from source for each Apple target (`-Zbuild-std`; RUSTC_BOOTSTRAP=1 for
#   these commands alone);
# * cargo-zigbuild with zig (PyPI): zig compiles the C in the tree (bundled SQLite) against the
#   macOS headers it ships and links Mach-O against its libSystem stubs (no Apple frameworks).
APPLE_TARGETS=(aarch64-apple-darwin x86_64-apple-darwin)
# cargo-zigbuild, and the python3 that runs `-m ziglang` for it.
export PATH="$SMOLSWEEP_REPO/.tools/apple-venv/bin:$PATH"
# scripts/test.sh exports rustup's clippy-driver as the workspace wrapper for the Linux build;
# apple-check.sh names the one that matches the rustc chosen here (APPLE_CLIPPY_DRIVER).
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
APPLE_BUILD_STD=()
_apple_sysroot=$(rustc --print sysroot 2>/dev/null || true)
if [ -n "$_apple_sysroot" ] && [ -d "$_apple_sysroot/lib/rustlib/aarch64-apple-darwin/lib" ] \
  && [ -d "$_apple_sysroot/lib/rustlib/x86_64-apple-darwin/lib" ]; then
  APPLE_CLIPPY_DRIVER="$_apple_sysroot/bin/clippy-driver"
else
  export CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
  APPLE_BUILD_STD=(-Zbuild-std=std,panic_abort)
  APPLE_CLIPPY_DRIVER=/usr/bin/clippy-driver
fi
unset _apple_sysroot
# The oldest macOS the app supports (tauri.macos.conf.json, the cask): without it zig stamps
# its own newest minimum (15.0) into the executables.
export MACOSX_DEPLOYMENT_TARGET=11.0
export CARGO_INCREMENTAL=0
# Both profiles strip through rust-objcopy (release: `strip = "symbols"`; dev: debuginfo, as
# cargo does without debug info), which neither Debian's toolchain nor rustup's default profile
# ships. Set for every Apple command alike, so the link and the check share their build scripts
# and proc macros (a profile that differs gives every unit another hash).
export CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_DEV_STRIP=false
# A target dir of its own: nothing in it is shared with the Linux build.
export CARGO_TARGET_DIR="${SMOLSWEEP_APPLE_TARGET_DIR:-$SMOLSWEEP_REPO/target/apple}"

# `cargo-zigbuild SUBCOMMAND ARGS…` for both Apple targets in one cargo invocation (build
# scripts and proc macros are compiled once for both).
apple_cargo() {
  local sub=$1 t targets=()
  shift
  for t in "${APPLE_TARGETS[@]}"; do targets+=(--target "$t"); done
  cargo-zigbuild "$sub" ${APPLE_BUILD_STD[@]+"${APPLE_BUILD_STD[@]}"} "${targets[@]}" --locked "$@"
}
