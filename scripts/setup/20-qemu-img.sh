# qemu-img: the fixtures create real qcow2 overlays with it (Debian package qemu-utils).
if ! command -v qemu-img >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q && $SUDO apt-get install -y -q qemu-utils
fi
