#!/usr/bin/env bash
# Build the .deb (offline): the tray app, the `smolsweep` CLI in /usr/bin, its shell completions
# (bash, zsh, fish) and man pages (generated from the CLI's clap definitions by the CLI itself:
# `smolsweep completions SHELL`, `smolsweep man --out-dir DIR`), a desktop entry and icons.
# Needs the packages from scripts/setup/50-desktop.sh. Output:
#   target/release/bundle/deb/Smolsweep_<version>_<arch>.deb
# `--debug` packages the dev-profile build instead, into target/debug/bundle/deb/: the same
# files, the same contents check. It compiles nothing of its own: the binaries are the ones
# `cargo test --workspace` builds (`cargo test --workspace --no-run` brings them up to date, and
# does nothing after a test run), bundled with `tauri bundle`. Building them again here, per
# package or with Tauri's release features, recompiled some 100 crates (2.5 minutes on 2 cores),
# and an optimized build of every crate takes about 14. The test command uses it; a release is
# made without it (`tauri build`).
# After the build the package's contents are checked: a missing CLI, completion or man page
# fails the build.
set -euo pipefail
cd "$(dirname "$0")"
[ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --silent
profile=release
for arg in "$@"; do [ "$arg" = --debug ] && profile=debug; done
cargo_profile=(--release)
[ "$profile" = debug ] && cargo_profile=()
# The CLI goes into the package next to the app (bundle.linux.deb.files in tauri.conf.json).
if [ "$profile" = debug ]; then
  (cd .. && cargo test --workspace --no-run --locked -q)
else
  cargo build "${cargo_profile[@]}" --locked -p smolsweep --bin smolsweep
fi
root=$(cd .. && pwd)
cli="$root/target/$profile/smolsweep"
share="$root/target/$profile/share"
rm -rf "$share"
mkdir -p "$share/completions" "$share/man/man1"
"$cli" completions bash >"$share/completions/smolsweep"
"$cli" completions zsh >"$share/completions/_smolsweep"
"$cli" completions fish >"$share/completions/smolsweep.fish"
"$cli" man --out-dir "$share/man/man1"
gzip -9n "$share"/man/man1/*.1

# Extra files of the package, merged into bundle.linux.deb.files (`tauri build --config`).
files="\"/usr/bin/smolsweep\": \"$cli\""
files+=", \"/usr/share/bash-completion/completions/smolsweep\": \"$share/completions/smolsweep\""
files+=", \"/usr/share/zsh/vendor-completions/_smolsweep\": \"$share/completions/_smolsweep\""
files+=", \"/usr/share/fish/vendor_completions.d/smolsweep.fish\": \"$share/completions/smolsweep.fish\""
# The automatic clean-up as a systemd user timer, installed disabled:
# `systemctl --user enable --now smolsweep-auto.timer` turns it on.
files+=", \"/usr/lib/systemd/user/smolsweep-auto.service\": \"$root/packaging/systemd/smolsweep-auto.service\""
files+=", \"/usr/lib/systemd/user/smolsweep-auto.timer\": \"$root/packaging/systemd/smolsweep-auto.timer\""
for page in "$share"/man/man1/*.1.gz; do
  files+=", \"/usr/share/man/man1/$(basename "$page")\": \"$page\""
done
config="{\"bundle\": {\"linux\": {\"deb\": {\"files\": {$files}}}}}"

cd ../src-tauri
if [ "$profile" = debug ]; then
  ../packaging/node_modules/.bin/tauri bundle --bundles deb --config "$config" "$@"
else
  ../packaging/node_modules/.bin/tauri build --bundles deb --config "$config" "$@"
fi

deb=$(ls -t "$root"/target/"$profile"/bundle/deb/*.deb | head -1)
listing=$(dpkg-deb --contents "$deb")
missing=0
for want in \
  usr/bin/smolsweep \
  usr/bin/smolsweep-desktop \
  usr/share/bash-completion/completions/smolsweep \
  usr/share/zsh/vendor-completions/_smolsweep \
  usr/share/fish/vendor_completions.d/smolsweep.fish \
  usr/share/man/man1/smolsweep.1.gz \
  usr/share/man/man1/smolsweep-prune.1.gz \
  usr/lib/systemd/user/smolsweep-auto.service \
  usr/lib/systemd/user/smolsweep-auto.timer; do
  if ! grep -Eq " \.?/?$want\$" <<<"$listing"; then
    echo "build-deb.sh: $want is missing from $deb" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || { printf '%s\n' "$listing" >&2; exit 1; }
echo "$deb"
