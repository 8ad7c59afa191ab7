#!/usr/bin/env python3
"""Generate a HOME holding about FILES files of SmolVM state, laid out like a long-used machine
with both products (bench/SCALE.md):

  ~/.cache/smolvm/vms/_shared/<sha256>/rootfs/...   node-shared pack stores (unpacked rootfs
                                                     trees), 60 % of the files
  ~/.cache/smolvm/init-layers/<sha256>/...          the --oci-cache bake cache (unpacked layers),
                                                     15 %
  ~/.cache/smolvm-pack/<8hex>/{layers/<sha256>/...,lib/,agent-rootfs/}
                                                     extracted packs, 15 %
  ~/.cache/smolvm-registry/blobs/sha256/<hex>       registry blob cache (flat), 2 %
  ~/.cache/smolvm/vms/_cow-bases/<digest>/base.ext4 CoW disk bases (sparse)
  ~/.cache/smolvm/vms/<hash16>/                      MACHINES machine dirs: name, sparse
                                                     storage.raw (20 GiB, 4 MiB written) and
                                                     overlay.raw (10 GiB, 1 MiB), console log,
                                                     vm.lock, agent.config.json
  ~/.local/share/smolvm/agent-rootfs/               the real agent rootfs when --agent-rootfs DIR
                                                     is given (copied), else a generated one
  ~/.celesto/images/<preset>-v<ver>-amd64-qemu/     Celesto image caches (current and stale):
                                                     sparse rootfs.ext4, kernel, initrd
  ~/.local/state/celesto/{disks/sb-N.qcow2,sb-N.log} SANDBOXES sandbox disks (qcow2 overlays made
                                                     by qemu-img when present) and console logs

Nothing has an inventory row, so every machine dir and sandbox disk is a leftover; the point is
the walk. The rest of the file budget (8 %) goes to more `_shared` stores.

usage: gen_scale_home.py HOME FILES [--machines N] [--sandboxes N] [--agent-rootfs DIR]
Prints the number of regular files written."""
import hashlib
import os
import shutil
import subprocess
import sys

home, files = sys.argv[1], int(sys.argv[2])
if not os.path.isabs(home):
    sys.exit("gen_scale_home.py: HOME must be an absolute path")
machines, sandboxes, agent_rootfs = 50, 100, None
args = sys.argv[3:]
while args:
    if args[0] == "--machines":
        machines = int(args[1])
    elif args[0] == "--sandboxes":
        sandboxes = int(args[1])
    elif args[0] == "--agent-rootfs":
        agent_rootfs = args[1]
    else:
        sys.exit(f"unknown argument {args[0]}")
    args = args[2:]

made = 0


def h(s, n=64):
    return hashlib.sha256(s.encode()).hexdigest()[:n]


def write(path, size):
    global made
    with open(path, "wb") as fh:
        fh.write(b"x" * size)
    made += 1


def sparse(path, apparent, written):
    global made
    with open(path, "wb") as fh:
        fh.truncate(apparent)
        if written:
            fh.seek(apparent // 2)
            fh.write(b"d" * written)
    made += 1


def rootfs_tree(root, n):
    """An unpacked rootfs or layer: packages of 8-40 small files under usr/lib, usr/share, ...,
    every third package two levels deeper, an occasional 300 KB library, 5 hard links."""
    tops = ["usr/lib", "usr/share", "usr/bin", "etc", "var/lib", "opt/app"]
    k = pkg = 0
    first = None
    while k < n:
        width = 8 + (pkg * 37) % 33
        d = os.path.join(root, tops[pkg % len(tops)], f"pkg{pkg:04d}")
        if pkg % 3 == 0:
            d = os.path.join(d, "lib", f"m{pkg % 7}")
        os.makedirs(d, exist_ok=True)
        for f in range(min(width, n - k)):
            size = 300_000 if made % 997 == 0 else (made * 7919) % 6000
            p = os.path.join(d, f"f{f:02d}.so")
            write(p, size)
            first = first or p
            k += 1
        pkg += 1
    if first:
        b = os.path.join(root, "bin")
        os.makedirs(b, exist_ok=True)
        for j in range(5):
            os.link(first, os.path.join(b, f"tool{j}"))


def split(total, parts):
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


cache = os.path.join(home, ".cache")
vms = os.path.join(cache, "smolvm", "vms")
os.makedirs(vms, exist_ok=True)

# smol-machines: _shared stores (60 % + the unassigned 8 %), one per 12,500 files.
n_shared = files * 68 // 100
stores = max(1, n_shared // 12_500)
for i, n in enumerate(split(n_shared, stores)):
    root = os.path.join(vms, "_shared", h(f"s{i}"))
    rootfs_tree(os.path.join(root, "rootfs"), n)
    with open(os.path.join(root, "manifest.json"), "w") as fh:
        fh.write('{"layers": []}\n')

# The --oci-cache bake cache: 40 unpacked layers.
for i, n in enumerate(split(files * 15 // 100, 40)):
    rootfs_tree(os.path.join(cache, "smolvm", "init-layers", h(f"i{i}")), n)

# Extracted packs: 8 entries, each layers/<sha256>/ x4 plus lib/ and an agent rootfs.
for i, n in enumerate(split(files * 15 // 100, 8)):
    entry = os.path.join(cache, "smolvm-pack", h(f"p{i}", 8))
    for j, m in enumerate(split(max(0, n - 200), 4)):
        rootfs_tree(os.path.join(entry, "layers", h(f"p{i}l{j}")), m)
    os.makedirs(os.path.join(entry, "lib"), exist_ok=True)
    sparse(os.path.join(entry, "lib", "libkrunfw.so.5"), 17 << 20, 17 << 20)
    rootfs_tree(os.path.join(entry, "agent-rootfs"), 199)

# Registry blob cache: flat sha256 directory.
blobs = os.path.join(cache, "smolvm-registry", "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
for i in range(files * 2 // 100):
    write(os.path.join(blobs, h(f"b{i}")), 2000 + (i * 7919) % 60_000)

# CoW disk bases.
for i in range(4):
    d = os.path.join(vms, "_cow-bases", h(f"c{i}"))
    os.makedirs(d, exist_ok=True)
    sparse(os.path.join(d, "base.ext4"), 2 << 30, 64 << 20)

# Machine dirs, named as smolvm names them (first 16 hex of sha256(name)).
for i in range(machines):
    name = f"machine-{i:03d}"
    d = os.path.join(vms, h(name, 16))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "name"), "w") as fh:
        fh.write(name)
    sparse(os.path.join(d, "storage.raw"), 20 << 30, 4 << 20)
    sparse(os.path.join(d, "overlay.raw"), 10 << 30, 1 << 20)
    write(os.path.join(d, "agent-console.log"), 20_000)
    write(os.path.join(d, "agent.config.json"), 900)
    write(os.path.join(d, "vm.lock"), 0)
    made += 1  # the name file

# The agent rootfs in the data root (unless the HOME has one already).
ar = os.path.join(home, ".local", "share", "smolvm", "agent-rootfs")
if os.path.exists(ar):
    pass
elif agent_rootfs:
    shutil.copytree(agent_rootfs, ar, symlinks=True, ignore=shutil.ignore_patterns(".complete"))
    made += sum(len(fs) for _, _, fs in os.walk(ar))
else:
    rootfs_tree(ar, 400)

# Celesto: image caches (current version and stale ones) and sandbox disks and logs.
images = os.path.join(home, ".celesto", "images")
for ver in ["0.1.10", "0.1.9", "0.0.24"]:
    for preset in ["ubuntu", "debian"]:
        d = os.path.join(images, f"{preset}-v{ver}-amd64-qemu")
        os.makedirs(d, exist_ok=True)
        sparse(os.path.join(d, "rootfs.ext4"), 2 << 30, 8 << 20)
        write(os.path.join(d, "vmlinux"), 300_000)
        write(os.path.join(d, "initrd.img"), 200_000)
    d = os.path.join(images, f"base-kernel-v{ver}-amd64")
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "vmlinux.elf"), 300_000)
state = os.path.join(home, ".local", "state", "celesto")
disks = os.path.join(state, "disks")
os.makedirs(disks, exist_ok=True)
os.chmod(state, 0o700)
base = os.path.join(images, "ubuntu-v0.1.10-amd64-qemu", "rootfs.ext4")
qemu_img = shutil.which("qemu-img")
for i in range(sandboxes):
    disk = os.path.join(disks, f"sb-{i:03d}.qcow2")
    if qemu_img:
        subprocess.run([qemu_img, "create", "-q", "-f", "qcow2", "-b", base, "-F", "raw", disk],
                       check=True)
        made += 1
    else:
        sparse(disk, 2 << 30, 256 << 10)
    write(os.path.join(state, f"sb-{i:03d}.log"), 5_000)
print(made)
