# e2fsprogs (mke2fs, debugfs, dumpe2fs, e2fsck): the compaction estimate's tests make real ext4
# images offline and check the free blocks it reads against dumpe2fs. Debian installs them in
# /usr/sbin, which a user's PATH may lack: the tests look there too.
if ! command -v mke2fs >/dev/null 2>&1 && [ ! -x /usr/sbin/mke2fs ] && [ ! -x /sbin/mke2fs ]; then
  _e2_sudo=""
  [ "$(id -u)" -ne 0 ] && _e2_sudo="sudo"
  $_e2_sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $_e2_sudo apt-get install -y -q --no-install-recommends e2fsprogs
fi
