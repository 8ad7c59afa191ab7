#!/usr/bin/env python3
"""Time one command and sample the allocated bytes (st_blocks x 512) of the files it touches.

usage: WATCH_IN_PLACE=DISK WATCH_NEW=FILE compact_vs_convert.py CMD ARGS...
  WATCH_IN_PLACE  the disk a command changes in place (its growth over the start is extra space)
  WATCH_NEW       a file the command creates ('-' for none; its size is all extra space)
The paths come from the environment, not the command line: a process naming a disk among its
arguments is one using it, by Smolsweep's "in use" rule, and `smolsweep compact` refuses it.
Prints one JSON object: wall_s, peak_extra_bytes, in_place_before, in_place_after, new_after.
Sampling every 5 ms; the allocated bytes of files (not the file system's free space) so that other
programs writing to the same file system move nothing.
"""
import json
import os
import subprocess
import sys
import threading
import time


def allocated(p):
    try:
        return os.stat(p).st_blocks * 512
    except FileNotFoundError:
        return 0


def main():
    in_place, new = os.environ["WATCH_IN_PLACE"], os.environ.get("WATCH_NEW", "-")
    cmd = sys.argv[1:]
    before = allocated(in_place)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            extra = max(0, allocated(in_place) - before)
            if new != "-":
                extra += allocated(new)
            peak[0] = max(peak[0], extra)
            time.sleep(0.005)

    t = threading.Thread(target=sample)
    t.start()
    start = time.monotonic()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    wall = time.monotonic() - start
    done.set()
    t.join()
    after_new = allocated(new) if new != "-" else 0
    peak[0] = max(peak[0], max(0, allocated(in_place) - before) + after_new)
    print(json.dumps({"rc": rc, "wall_s": round(wall, 2), "peak_extra_bytes": peak[0],
                      "in_place_before": before, "in_place_after": allocated(in_place),
                      "new_after": after_new}))


main()
