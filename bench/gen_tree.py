#!/usr/bin/env python3
"""Generate a benchmark tree: many small files in nested directories, sparse large files and
hard links. Usage: gen_tree.py DIR FILES"""
import os
import sys

root, files = sys.argv[1], int(sys.argv[2])
per_dir = 100
sub_per_top = 10
ndirs = max(1, files // per_dir)
os.makedirs(root, exist_ok=True)
made = 0
for d in range(ndirs):
    top = os.path.join(root, f"top{d // sub_per_top:04d}")
    sub = os.path.join(top, f"sub{d % sub_per_top:02d}", "leaf")
    os.makedirs(sub, exist_ok=True)
    for f in range(per_dir):
        if made >= files:
            break
        size = (made * 7919) % 9000  # 0..9 KB, a few blocks at most
        with open(os.path.join(sub, f"f{f:03d}.dat"), "wb") as fh:
            fh.write(b"x" * size)
        made += 1
# Sparse disks: 1 GiB apparent, 1 MiB written in the middle.
sparse = os.path.join(root, "disks")
os.makedirs(sparse, exist_ok=True)
for i in range(20):
    p = os.path.join(sparse, f"vm{i}.ext4")
    with open(p, "wb") as fh:
        fh.truncate(1 << 30)
        fh.seek(512 << 20)
        fh.write(b"d" * (1 << 20))
# Hard links: 1000 extra names for existing files, across directories.
links = os.path.join(root, "links")
os.makedirs(links, exist_ok=True)
for i in range(min(1000, made)):
    d = i % ndirs
    src = os.path.join(root, f"top{d // sub_per_top:04d}", f"sub{d % sub_per_top:02d}", "leaf",
                       f"f{i % per_dir:03d}.dat")
    if os.path.exists(src):
        os.link(src, os.path.join(links, f"l{i:04d}"))
# Symlinks (never followed): one to a sparse disk, one to a directory.
os.symlink(os.path.join(sparse, "vm0.ext4"), os.path.join(root, "link-to-disk.ext4"))
os.symlink(os.path.join(root, "top0000"), os.path.join(root, "link-to-dir"))
