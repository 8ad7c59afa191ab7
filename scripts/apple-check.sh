#!/usr/bin/env bash
# The macOS build, checked on Linux on every run (issue 28): the CLI linked as Mach-O for arm64
# and x86_64, then every crate of the workspace (core, CLI, desktop shell, fixtures, every test
# target) type-checked and linted with clippy's `-D warnings` for both Apple targets. Nothing
# of it runs here; what runs here of the macOS paths is tested by recordings (README, Platforms).
set -euo pipefail
cd "$(dirname "$0")/.."
export SMOLSWEEP_REPO="$PWD"
# shellcheck source=scripts/apple-env.sh
source scripts/apple-env.sh
start=$SECONDS
# The CLI first: the desktop crate's build script wants the bundle's externalBin
# (src-tauri/binaries/smolsweep-<target>) to exist. Dev profile: this proves the link; the
# release build is packaging's.
SMOLSWEEP_MACOS_PROFILE=${SMOLSWEEP_MACOS_PROFILE:-dev} packaging/macos/build-macos.sh cli
echo "apple: CLI linked for ${APPLE_TARGETS[*]}: $((SECONDS - start)) s"
start=$SECONDS
# Clippy as the workspace's compiler wrapper on `check`: dependencies are type-checked once,
# the workspace's crates linted (the clippy-driver of the toolchain apple-env.sh chose).
RUSTC_WORKSPACE_WRAPPER="$APPLE_CLIPPY_DRIVER" \
  CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
  apple_cargo check --workspace --all-targets
echo "apple: check + clippy -D warnings, whole workspace, all targets: $((SECONDS - start)) s"
