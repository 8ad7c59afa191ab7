#!/usr/bin/env python3
"""Build a Celesto data directory at scale with the real celesto package (bench/SCALE.md).

Run with the celesto venv's python and the environment of celesto-smolvm.md §12.2
(CELESTO_DATA_DIR, CELESTO_IMAGE_DIR, HOME, telemetry off); needs qemu-img. Uses the CLI's
own service (`CLIService().manager()`, rows in celesto.db exactly as `celesto sandbox create`
writes them) and the SDK's in-memory manager (disks with no row, as an SDK process that exited
without delete() leaves them), both with `create` only (no VMM is started: a qcow2 overlay on a
cached base image, backed by the image cache).

usage: gen_celesto_state.py WORKDIR [--rows 200] [--sdk 500] [--log-only 400]

  rows      sandboxes with a row: disk + console log each; half of them then marked stopped
            (the row update a stop makes); every fourth has a `.backup-<hex>` companion
  sdk       sandboxes without a row: disk + log; every fifth has a `.create-backup-<hex>`
            companion; every tenth is a saved disk (`.retained` marker)
  log-only  console logs with no disk and no row

Every file and directory is then dated 30 days back. With the defaults: 200 rows and 2,000 files under disks/ and beside them as logs. WORKDIR gets
vmlinuz and initrd.gz stand-ins (never booted); the base image is
$CELESTO_IMAGE_DIR/ubuntu-v<version>-amd64-qemu/rootfs.ext4 (64 MiB sparse)."""
import os
import sqlite3
import sys
import time
from pathlib import Path

import celesto
from celesto.cli.service import CLIService
from celesto.types import VMConfig
from celesto.vm import CelestoManager

work = Path(sys.argv[1])
opts = {"--rows": 200, "--sdk": 500, "--log-only": 400}
a = sys.argv[2:]
while a:
    opts[a[0]] = int(a[1])
    a = a[2:]
data = Path(os.environ["CELESTO_DATA_DIR"])
images = Path(os.environ["CELESTO_IMAGE_DIR"])
base = images / f"ubuntu-v{celesto.__version__}-amd64-qemu" / "rootfs.ext4"
base.parent.mkdir(parents=True, exist_ok=True)
with open(base, "wb") as f:
    f.truncate(64 << 20)
for stub in ("vmlinuz", "initrd.gz"):
    (work / stub).write_bytes(b"\0" * 4096)


def cfg(vm_id):
    return VMConfig(vm_id=vm_id, backend="qemu", kernel_path=work / "vmlinuz",
                    initrd_path=work / "initrd.gz", rootfs_path=base, rootfs_format="raw-ext4",
                    boot_args="console=ttyS0 reboot=k panic=1", memory=256, vcpu_count=1)


def log(vm_id, size):
    p = data / f"{vm_id}.log"
    p.write_bytes(b"[    0.000000] Linux version 6.1.0\n" * (size // 36))
    os.chmod(p, 0o600)


t0 = time.time()
cli = CLIService().manager()
for i in range(opts["--rows"]):
    vm = f"sb-{i:03d}"
    cli.create(cfg(vm))
    log(vm, 8_000 + 37 * i)
    if i % 4 == 0:
        (data / "disks" / f"{vm}.qcow2.backup-{i:08x}").write_bytes(b"\0" * 196_616)
db = sqlite3.connect(data / "celesto.db", isolation_level=None)
db.execute("UPDATE vms SET status = 'stopped', updated_at = ? WHERE CAST(substr(id, 4) AS INTEGER) % 2 = 1",
           (time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),))
db.close()
sdk = CelestoManager()
for i in range(opts["--sdk"]):
    vm = f"sdk-{i:03d}"
    sdk.create(cfg(vm))
    log(vm, 5_000 + 11 * i)
    if i % 5 == 0:
        (data / "disks" / f"{vm}.qcow2.create-backup-{i:08x}").write_bytes(b"\0" * 196_616)
    if i % 10 == 0:
        (data / "disks" / f"{vm}.qcow2.retained").touch()
for i in range(opts["--log-only"]):
    log(f"gone-{i:03d}", 3_000 + 7 * i)
# Everything 30 days old, so that the age guard of neither tool decides anything.
old = time.time() - 30 * 86400
for top in (data, images, work / "vmlinuz", work / "initrd.gz"):
    for dp, dns, fns in os.walk(top):
        for n in dns + fns:
            os.utime(os.path.join(dp, n), (old, old), follow_symlinks=False)
    os.utime(top, (old, old))
disk_files = len(os.listdir(data / "disks"))
logs = len(list(data.glob("*.log")))
print(f"{opts['--rows']} rows, {disk_files} files in disks/, {logs} logs, "
      f"{disk_files + logs} in all, {time.time() - t0:.0f} s")
