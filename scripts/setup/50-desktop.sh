# Desktop app prerequisites: WebKitGTK + appindicator to build the Tauri shell, and a virtual
# display, session bus, notification daemon, xdotool, imagemagick and WebKitWebDriver for the
# display-server tests; tauri-driver (cargo) and the Tauri CLI (npm, for `tauri build --bundles deb`).
# Idempotent: installs only what is missing. Sourced by scripts/test.sh.
_smolsweep_desktop_pkgs="build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-dev
  dbus xvfb xauth xdotool dunst libglib2.0-bin webkit2gtk-driver imagemagick ca-certificates trayer"
_smolsweep_missing=""
for p in $_smolsweep_desktop_pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || _smolsweep_missing="$_smolsweep_missing $p"
done
if [ -n "$_smolsweep_missing" ]; then
  _sudo=""; [ "$(id -u)" -ne 0 ] && _sudo="sudo"
  $_sudo apt-get update -q
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -q --no-install-recommends $_smolsweep_missing
fi
unset _smolsweep_missing _smolsweep_desktop_pkgs
if ! command -v tauri-driver >/dev/null 2>&1; then
  cargo install tauri-driver --locked --version 2.1.0
fi
# The Tauri CLI for bundling, pinned in packaging/package-lock.json, installed under packaging/.
_smolsweep_pkg="${SMOLSWEEP_REPO:-$PWD}/packaging"
if [ -f "$_smolsweep_pkg/package.json" ] && [ ! -x "$_smolsweep_pkg/node_modules/.bin/tauri" ] && command -v npm >/dev/null 2>&1; then
  (cd "$_smolsweep_pkg" && npm ci --no-audit --no-fund --silent)
fi
unset _smolsweep_pkg
# axe-core for the window's accessibility check (src-tauri/tests/it/webdriver.rs injects it into
# the page under WebDriver), pinned, installed under target/axe/.
_smolsweep_axe="${SMOLSWEEP_REPO:-$PWD}/target/axe"
if [ ! -f "$_smolsweep_axe/node_modules/axe-core/axe.min.js" ] && command -v npm >/dev/null 2>&1; then
  mkdir -p "$_smolsweep_axe" && (cd "$_smolsweep_axe" && npm install --no-audit --no-fund --silent --prefix . axe-core@4.14.1)
fi
unset _smolsweep_axe
