"""Real Celesto 0.1.10 sandboxes on QEMU, driven over stdin/stdout by tests/it/real_vm.rs.

Both recipes of celesto-smolvm.md §12.6, in one process:

* "A CLI-persisted sandbox": `CLIService().manager().create(cfg)` gives CLI_ID a row in
  `celesto.db` and `disks/<CLI_ID>.qcow2` (it is never started);
* "An SDK sandbox (no row)": `CelestoManager()` keeps its state in process memory, so once this
  process dies without `delete()` the QEMU it started (in its own session) runs on as an orphan,
  and `disks/<SDK_ID>.qcow2` and `<SDK_ID>.log` have no row.

Usage: python celesto_sdk_vm.py SDK_ID CLI_ID KERNEL INITRD BASE_ROOTFS SOCKET_DIR MEMORY_MIB

The data directory comes from $CELESTO_DATA_DIR. SOCKET_DIR replaces /tmp for the QMP socket.
Protocol, one JSON object per stdout line:

1. creates both sandboxes (qcow2 overlays over BASE_ROOTFS), prints {"event": "created", ...};
2. waits for the line "start" on stdin, starts SDK_ID's QEMU, prints {"event": "started", ...};
3. waits for stdin to close, then exits (the test kills it with SIGKILL before that).
"""

import json
import sys
from pathlib import Path

from celesto.cli.service import CLIService
from celesto.types import VMConfig
from celesto.vm import CelestoManager


def emit(**fields):
    print(json.dumps(fields), flush=True)


def config(vm_id, kernel, initrd, base, memory):
    return VMConfig(
        vm_id=vm_id,
        backend="qemu",
        kernel_path=Path(kernel),
        initrd_path=Path(initrd),
        rootfs_path=Path(base),
        rootfs_format="raw-ext4",
        boot_args="console=ttyS0 reboot=k panic=1 rdinit=/init",
        memory=int(memory),
        vcpu_count=1,
    )


def main():
    sdk_id, cli_id, kernel, initrd, base, socket_dir, memory = sys.argv[1:8]
    cli = CLIService().manager(socket_dir=Path(socket_dir), backend="qemu")
    cli_info = cli.create(config(cli_id, kernel, initrd, base, memory))
    sdk = CelestoManager(socket_dir=Path(socket_dir), backend="qemu")
    info = sdk.create(config(sdk_id, kernel, initrd, base, memory))
    emit(
        event="created",
        data_dir=str(sdk.data_dir),
        disk=str(info.config.rootfs_path),
        rootfs_format=info.config.rootfs_format,
        cli_disk=str(cli_info.config.rootfs_path),
    )
    if sys.stdin.readline().strip() != "start":
        return
    info = sdk.start(sdk_id)
    emit(
        event="started",
        pid=info.pid,
        control_socket=str(info.control_socket_path),
        log=str(sdk.data_dir / f"{sdk_id}.log"),
    )
    sys.stdin.read()


if __name__ == "__main__":
    main()
