#!/usr/bin/env python3
"""Generate a HOME whose smolvm stores are laid out like extracted image layers with hard links
(issue 20): the `_shared` pack stores of gen_shared_home.py (FILES files in all), then every
tenth regular file of them (--every N) given a second name in OUTSIDE, a directory beside the
HOME that no scan walks (as a layer store's files are linked from another layer or a snapshot).

usage: gen_hardlink_home.py HOME OUTSIDE FILES [--every N] [gen_shared_home.py options]
Prints the number of files and of files given a second name."""
import os
import subprocess
import sys

home, outside, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
rest = sys.argv[4:]
every = 10
if rest[:1] == ["--every"]:
    every = int(rest[1])
    rest = rest[2:]
here = os.path.dirname(os.path.abspath(__file__))
made = subprocess.run(
    [sys.executable, os.path.join(here, "gen_shared_home.py"), home, str(files), *rest],
    check=True, capture_output=True, text=True,
).stdout.strip()
os.makedirs(outside, exist_ok=True)
linked = 0
seen = 0
for dp, dns, fns in os.walk(os.path.join(home, ".cache")):
    dns.sort()
    for fn in sorted(fns):
        p = os.path.join(dp, fn)
        st = os.lstat(p)
        if st.st_nlink != 1:
            continue  # the stores' own busybox-style links stay as they are
        seen += 1
        if seen % every == 0:
            os.link(p, os.path.join(outside, "l%07d" % linked))
            linked += 1
print(made, linked)
