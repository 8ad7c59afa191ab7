# The toolchain that checks and links the macOS build on Linux (scripts/apple-check.sh,
# packaging/macos/build-macos.sh; scripts/apple-env.sh says how it is used):
# Debian's rustc-web, cargo-web, rust-web-src and rust-web-clippy (1.96, bookworm-security; they
# install /usr/bin/rustc and /usr/bin/cargo, named explicitly; rustup's stay first on PATH),
# llvm (llvm-lipo joins the universal binary), file (says what was linked), and zig with
# cargo-zigbuild from PyPI in a venv of their own:
#
#   $SMOLSWEEP_REPO/.tools/apple-venv   ziglang, cargo-zigbuild (scripts/apple-env.sh puts its
#                                       bin first on PATH for the Apple commands alone)
_smolsweep_apt rustc-web cargo-web rust-web-src rust-web-clippy llvm file python3-venv
_st_apple_venv="${SMOLSWEEP_REPO:?SMOLSWEEP_REPO must be set}/.tools/apple-venv"
if ! "$_st_apple_venv/bin/python3" -m ziglang version >/dev/null 2>&1 \
  || [ ! -x "$_st_apple_venv/bin/cargo-zigbuild" ]; then
  echo "setup: apple venv (ziglang, cargo-zigbuild)"
  rm -rf "$_st_apple_venv"
  python3 -m venv "$_st_apple_venv"
  "$_st_apple_venv/bin/python3" -m pip install -q --disable-pip-version-check \
    ziglang==0.17.1 cargo-zigbuild==0.24.1
fi
