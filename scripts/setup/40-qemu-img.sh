# qemu-img (Debian qemu-utils): the qcow2 header tests create real overlays with it.
if ! command -v qemu-img >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q qemu-utils
fi
# qemu-storage-daemon: compaction checks a qcow2 disk's guest file system through its FUSE
# export (Debian 12 ships it in qemu-system-common, Debian 13's qemu-utils has it); a user who
# is not root mounts that export through fusermount3 (fuse3).
_qsd_sudo=""
[ "$(id -u)" -ne 0 ] && _qsd_sudo="sudo"
if ! command -v qemu-storage-daemon >/dev/null 2>&1; then
  $_qsd_sudo apt-get install -y -q --no-install-recommends qemu-system-common
fi
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null 2>&1; then
  $_qsd_sudo apt-get install -y -q --no-install-recommends fuse3
fi
