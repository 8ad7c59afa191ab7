#!/usr/bin/env python3
"""A desktop-sized process table for bench/proc_table.sh.

usage: proc_farm.py PROCS FDS DIR

Forks PROCS children of this Python (so each maps what a Python process maps), each holding
FDS regular files of its own open under DIR/pNNNN/, then prints `ready <own pid> <child pid>...`
on one line and waits (its own pid: a launcher such as a version-manager shim may stand between
the caller and this process). On SIGTERM or SIGINT it kills exactly the
children it forked (by their pids), waits for them and removes DIR. The children die with it
too (PR_SET_PDEATHSIG), so a killed farm leaves no process behind.
"""

import ctypes
import os
import shutil
import signal
import sys

PR_SET_PDEATHSIG = 1


def child(dirpath, fds, ready_w, parent):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the farm died before the prctl took hold
        os._exit(0)
    held = [os.open(os.path.join(dirpath, f"f{j:04d}"), os.O_RDONLY) for j in range(fds)]
    os.write(ready_w, b"x")
    os.close(ready_w)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    del held  # the descriptors stay open: nothing closes them
    while True:
        signal.pause()


def main():
    procs, fds, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(root, exist_ok=False)
    pids = []

    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    me = os.getpid()
    try:
        for i in range(procs):
            d = os.path.join(root, f"p{i:04d}")
            os.mkdir(d)
            for j in range(fds):
                with open(os.path.join(d, f"f{j:04d}"), "wb") as f:
                    f.write(b"x")
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.close(r)
                try:
                    child(d, fds, w, me)
                finally:
                    os._exit(0)
            os.close(w)
            pids.append(pid)
            os.read(r, 1)  # the child holds its files
            os.close(r)
        print(f"ready {me} " + " ".join(map(str, pids)), flush=True)
        while True:
            signal.pause()
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
