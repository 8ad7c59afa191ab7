# C toolchain for bundled SQLite, and the Rust toolchain (rustup) with rustfmt and clippy.
_smolsweep_apt() {
  # apt-get install only the packages that are missing.
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    if [ ! -f /tmp/.smolsweep-apt-updated ]; then
      apt-get update -q >/dev/null && touch /tmp/.smolsweep-apt-updated
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
# tmux: the terminal browser's test drives `smolsweep browse` in a real terminal.
_smolsweep_apt build-essential pkg-config ca-certificates curl tmux
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt >/dev/null 2>&1 || true
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy >/dev/null 2>&1 || true
fi
