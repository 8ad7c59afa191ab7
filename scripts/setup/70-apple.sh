# The toolchain that checks and links the macOS build on Linux (scripts/apple-check.sh,
# packaging/macos/build-macos.sh; scripts/apple-env.sh says how it is used):
#
# * the standard library of both Apple targets for rustup's own toolchain (`rustup target add`,
#   prebuilt: nothing of std is compiled per run). Where rustup cannot fetch them, Debian's
#   rustc-web, cargo-web, rust-web-src and rust-web-clippy (1.96, bookworm-security) instead,
#   which build std from source for each target (slower; they install /usr/bin/rustc and
#   /usr/bin/cargo, named explicitly; rustup's stay first on PATH);
# * llvm (llvm-lipo joins the universal binary), file (says what was linked), and zig with
#   cargo-zigbuild from PyPI in a venv of their own (zig compiles the bundled SQLite against
#   its macOS headers and links Mach-O against its libSystem stubs):
#
#   $SMOLSWEEP_REPO/.tools/apple-venv   ziglang, cargo-zigbuild (scripts/apple-env.sh puts its
#                                       bin first on PATH for the Apple commands alone)
_st_apple_targets=(aarch64-apple-darwin x86_64-apple-darwin)
_st_apple_rustup_has() {
  local t installed
  installed=$(rustup target list --installed 2>/dev/null) || return 1
  for t in "${_st_apple_targets[@]}"; do grep -qx "$t" <<<"$installed" || return 1; done
}
if command -v rustup >/dev/null 2>&1 && ! _st_apple_rustup_has; then
  echo "setup: rustup target add ${_st_apple_targets[*]}"
  rustup target add "${_st_apple_targets[@]}" >/dev/null 2>&1 || true
fi
if _st_apple_rustup_has; then
  _smolsweep_apt llvm file python3-venv
else
  echo "setup: rustup has no Apple targets here: Debian's rustc-web builds std from source"
  _smolsweep_apt rustc-web cargo-web rust-web-src rust-web-clippy llvm file python3-venv
fi
_st_apple_venv="${SMOLSWEEP_REPO:?SMOLSWEEP_REPO must be set}/.tools/apple-venv"
if ! "$_st_apple_venv/bin/python3" -m ziglang version >/dev/null 2>&1 \
  || [ ! -x "$_st_apple_venv/bin/cargo-zigbuild" ]; then
  echo "setup: apple venv (ziglang, cargo-zigbuild)"
  rm -rf "$_st_apple_venv"
  python3 -m venv "$_st_apple_venv"
  "$_st_apple_venv/bin/python3" -m pip install -q --disable-pip-version-check \
    ziglang==0.17.1 cargo-zigbuild==0.24.1
fi
