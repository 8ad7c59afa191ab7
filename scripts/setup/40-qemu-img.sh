# qemu-img (Debian qemu-utils): the qcow2 header tests create real overlays with it.
if ! command -v qemu-img >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q qemu-utils
fi
