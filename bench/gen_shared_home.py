#!/usr/bin/env python3
"""Generate a HOME whose smolvm state is laid out like a busy smol-machines node (issue 11):
`~/.cache/smolvm/vms/_shared/<crc8>/` pack stores (80 by default, each an unpacked rootfs:
nested usr/lib/... directories of small files, a few larger files, some hard links) plus
`~/.cache/smolvm-pack/<crc8>/` pack-cache entries, FILES files in all. Each store has the
records upstream writes beside it (`<crc8>.lock`, `<crc8>.artifact-sha256`).

usage: gen_shared_home.py HOME FILES [--entries N] [--packs N]
Prints the number of files written."""
import hashlib
import os
import sys
import zlib

home, files = sys.argv[1], int(sys.argv[2])
entries = 80
packs = 4
args = sys.argv[3:]
while args:
    if args[0] == "--entries":
        entries = int(args[1]); args = args[2:]
    elif args[0] == "--packs":
        packs = int(args[1]); args = args[2:]
    else:
        sys.exit(f"unknown argument {args[0]}")

shared = os.path.join(home, ".cache", "smolvm", "vms", "_shared")
pack_cache = os.path.join(home, ".cache", "smolvm-pack")
os.makedirs(shared, exist_ok=True)
os.makedirs(pack_cache, exist_ok=True)

# 90 % of the files in _shared, the rest in the pack cache.
units = [(os.path.join(shared, "%08x" % zlib.crc32(b"s%d" % i)), "shared") for i in range(entries)]
units += [(os.path.join(pack_cache, "%08x" % zlib.crc32(b"p%d" % i)), "pack") for i in range(packs)]
for root, kind in units:
    if kind == "shared":
        with open(root + ".lock", "w"):
            pass
        with open(root + ".artifact-sha256", "w") as fh:
            fh.write(hashlib.sha256(root.encode()).hexdigest() + "\n")
shared_files = files * 9 // 10 if packs else files
per = []
for i, (_, kind) in enumerate(units):
    if kind == "shared":
        base, extra = divmod(shared_files, entries)
        per.append(base + (1 if i < extra else 0))
    else:
        base, extra = divmod(files - shared_files, packs)
        per.append(base + (1 if i - entries < extra else 0))

made = 0
for (root, kind), n in zip(units, per):
    # A rootfs: top-level dirs, then packages of 8-40 files, some nested two more levels.
    tops = ["usr/lib", "usr/share", "usr/bin", "etc", "var/lib", "opt/app"]
    k = 0
    pkg = 0
    while k < n:
        top = tops[pkg % len(tops)]
        width = 8 + (pkg * 37) % 33
        d = os.path.join(root, "rootfs", top, f"pkg{pkg:04d}")
        if pkg % 3 == 0:
            d = os.path.join(d, "lib", f"m{pkg % 7}")
        os.makedirs(d, exist_ok=True)
        for f in range(width):
            if k >= n:
                break
            size = (made * 7919) % 6000
            if made % 997 == 0:
                size = 300_000  # an occasional shared library
            with open(os.path.join(d, f"f{f:02d}.so"), "wb") as fh:
                fh.write(b"x" * size)
            k += 1
            made += 1
        pkg += 1
    # A few hard links inside each store (busybox-style), never across stores.
    bindir = os.path.join(root, "rootfs", "bin")
    os.makedirs(bindir, exist_ok=True)
    src = None
    for dp, _, fs in os.walk(os.path.join(root, "rootfs", "usr")):
        if fs:
            src = os.path.join(dp, fs[0])
            break
    if src:
        for j in range(5):
            os.link(src, os.path.join(bindir, f"tool{j}"))
    with open(os.path.join(root, "manifest.json"), "w") as fh:
        fh.write('{"layers": []}\n')
print(made)
