//! The rest of the process table after the identities, read to name who holds what the kernel
//! says is held (issue 40).
//!
//! A scan reads every process's identity first (`Depth::Identities`) and asks the kernel
//! whether anything it judges is open at all ([`held_below`], through `super::lease`). Only
//! when something is does it need the rest: which process holds or maps which file. Reading
//! every descriptor's name costs two kernel calls per descriptor (`stat` for its type and
//! identity, `readlink` for its name), reading every `maps` file makes the kernel write the
//! name of every mapping, and on a desktop almost none of those files has anything to do with
//! SmolVM. So the rest is read by identity, **one kernel call per descriptor or mapping**:
//! `stat` through `/proc/<pid>/fd/N` tells the file's device and inode (pipes, sockets,
//! anonymous inodes and devices are left out by their type), `PROCMAP_QUERY` on
//! `/proc/<pid>/maps` (Linux 6.11; the text on older kernels) a mapped file's device and inode
//! without its name. A name is read only when a question needs it ([`held_names`]): for what
//! holds one of the files the kernel says are held at or below the path asked about, or, when
//! the kernel cannot tell, for what lies on a file system where a name below that path can lie
//! ([`devices_below`]). What the identities already hold is not read again (a process's command
//! line, working and root directories; everything of a VMM-shaped process); a process they do
//! not have as it is now (started since, or its pid reused) is read whole.

use std::ffi::{CStr, OsStr};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{openat, statat, AtFlags, Mode, OFlags};

use super::{
    each_open_file, is_kernel_thread, open_dir, parse_maps, parse_stat, path_of, read_file,
    read_link, read_record, read_rest, read_table, strip_deleted_bytes, Depth, Scratch, PROC,
};
use crate::procs::{HeldBelow, HeldHow, HeldRef, Holders, Holdings, RawProcess};

/// [`crate::procs::holdings`] through `/proc`.
pub(crate) fn holdings(identities: &[RawProcess]) -> Holdings {
    holdings_in(Path::new(PROC), identities)
}

/// What one process adds to the [`Holdings`].
enum Row {
    /// Read whole: the identities did not have it as it is now.
    Whole(RawProcess),
    /// Its open regular files and mapped files by identity, and the mapped files it could
    /// only read by name.
    Held(Vec<HeldRef>, Vec<PathBuf>),
    /// Nothing more to read: the identities hold everything of it.
    Done,
}

/// [`holdings`] over another proc mount (tests).
pub(crate) fn holdings_in(proc_root: &Path, identities: &[RawProcess]) -> Holdings {
    // By pid: how the identities have it.
    let mut known: Vec<(u32, Known)> = identities
        .iter()
        .map(|p| {
            let done =
                crate::procs::shape::may_be_vmm(p) || is_kernel_thread(p.pid, p.ppid, &p.argv);
            let k = Known {
                start_time: p.start_time,
                proc_ino: p.proc_ino,
                done,
            };
            (p.pid, k)
        })
        .collect();
    known.sort_unstable_by_key(|k| k.0);
    let lookup = |pid: u32| {
        let i = known.binary_search_by_key(&pid, |k| k.0).ok()?;
        Some(known[i].1)
    };
    let mut h = Holdings::default();
    let rows = read_table(proc_root, |root, pid, _, s| {
        hold_at(root, pid, lookup(pid), s)
    });
    for (pid, row) in rows {
        match row {
            Row::Whole(p) => h.whole.push(p),
            Row::Held(held, mapped) => {
                h.held.extend(held);
                if !mapped.is_empty() {
                    h.mapped.push((pid, mapped));
                }
            }
            Row::Done => {}
        }
    }
    h.held.sort_unstable();
    h
}

/// A process as the identities have it.
#[derive(Debug, Clone, Copy)]
struct Known {
    start_time: u64,
    /// The inode number of its `/proc` directory then (0: not known).
    proc_ino: u64,
    /// Whether the identity read took everything of it already.
    done: bool,
}

/// One process's part of the holdings; `None` when it is gone (or its pid was reused while it
/// was read). `known`: how the identities have the process of that pid.
fn hold_at(root: BorrowedFd<'_>, pid: u32, known: Option<Known>, s: &mut Scratch) -> Option<Row> {
    let dir = open_dir(root, pid.to_string()).ok()?;
    let dir = dir.as_fd();
    // The same process as the identities read when its directory, just opened (so looked up
    // afresh: a directory of an ended process is never reached), is the one they listed; else
    // when its start time is theirs.
    let same_dir = |k: &Known| {
        k.proc_ino != 0 && rustix::fs::fstat(dir).is_ok_and(|st| st.st_ino == k.proc_ino)
    };
    let (start_time, done) = match known {
        Some(k) if same_dir(&k) => (k.start_time, k.done),
        _ => {
            read_record(dir, c"stat", &mut s.file).ok()?;
            let stat = parse_stat(&s.file)?;
            match known {
                Some(k) if k.start_time == stat.start_time => (k.start_time, k.done),
                _ => return read_rest(dir, pid, stat, Depth::Whole, s).map(Row::Whole),
            }
        }
    };
    if done {
        return Some(Row::Done);
    }
    let mut held = Vec::new();
    let at = |ino, dev, how| HeldRef {
        ino,
        dev,
        pid,
        start_time,
        how,
    };
    // An unreadable descriptor table (another user's process) adds nothing, as in a whole read.
    let _ = each_open_file(dir, &mut s.dents, |_, name, st| {
        if let Some(fd) = name.to_str().ok().and_then(|n| n.parse().ok()) {
            let linked = st.st_nlink != 0;
            held.push(at(st.st_ino, st.st_dev, HeldHow::Fd { fd, linked }));
        }
    });
    let mut named = Vec::new();
    if let Ok(maps) = openat(
        dir,
        c"maps",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        match mapped_by_identity(maps.as_fd()) {
            Some(files) => {
                held.extend(
                    files
                        .into_iter()
                        .map(|(dev, ino, addr)| at(ino, dev, HeldHow::Map { addr })),
                );
            }
            None => {
                if read_file(dir, c"maps", &mut s.file).is_ok() {
                    named = parse_maps(&s.file);
                }
            }
        }
    }
    // Read through the directory of this process: had it ended (and its pid been reused)
    // meanwhile, the reads would have failed, not read another process.
    Some(Row::Held(held, named))
}

/// `struct procmap_query` of Linux's `PROCMAP_QUERY` (`include/uapi/linux/fs.h`, Linux 6.11).
#[repr(C)]
#[derive(Debug, Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `_IOWR('f', 17, struct procmap_query)`.
const PROCMAP_QUERY: u64 =
    (3 << 30) | ((size_of::<ProcmapQuery>() as u64) << 16) | (0x66 << 8) | 17;
/// The mapping covering the address asked about, or else the next one.
const COVERING_OR_NEXT_VMA: u64 = 0x10;
/// Only mappings of files.
const FILE_BACKED_VMA: u64 = 0x20;

/// One `PROCMAP_QUERY` on the open `maps` file; with `name`, the mapped file's name is written
/// there (its length, terminating NUL included, in `vma_name_size`).
fn procmap_query(
    maps: BorrowedFd<'_>,
    q: &mut ProcmapQuery,
    name: Option<&mut [u8]>,
) -> Result<(), rustix::io::Errno> {
    q.size = size_of::<ProcmapQuery>() as u64;
    if let Some(buf) = name {
        q.vma_name_addr = buf.as_mut_ptr() as u64;
        q.vma_name_size = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    }
    // SAFETY: `q` is a valid `struct procmap_query` of the size it says, and the name buffer,
    // when given, is writable for `vma_name_size` bytes; the kernel writes nothing else.
    let r = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as _, q as *mut ProcmapQuery) };
    if r == 0 {
        Ok(())
    } else {
        Err(
            rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                .unwrap_or(rustix::io::Errno::IO),
        )
    }
}

/// Each file mapped through the open `maps` file, once: (device, inode, the start of one of its
/// mappings), asked of the kernel one mapping at a time without its name (cheaper than the
/// text, which writes every mapping's name). `None` when this kernel cannot be asked so
/// (before Linux 6.11) or the answer broke off.
fn mapped_by_identity(maps: BorrowedFd<'_>) -> Option<Vec<(u64, u64, u64)>> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut addr = 0;
    loop {
        let mut q = ProcmapQuery {
            query_flags: COVERING_OR_NEXT_VMA | FILE_BACKED_VMA,
            query_addr: addr,
            ..Default::default()
        };
        match procmap_query(maps, &mut q, None) {
            Ok(()) => {}
            Err(rustix::io::Errno::NOENT) => break,
            Err(_) => return None,
        }
        let dev = rustix::fs::makedev(q.dev_major, q.dev_minor);
        if out.last().is_none_or(|l| (l.0, l.1) != (dev, q.inode)) {
            out.push((dev, q.inode, q.vma_start));
        }
        if q.vma_end <= addr {
            return None;
        }
        addr = q.vma_end;
    }
    out.sort_unstable();
    out.dedup_by_key(|m| (m.0, m.1));
    Some(out)
}

/// The name of the file mapped at `addr` through the open `maps` file when it is still inode
/// `ino`.
fn map_name(maps: BorrowedFd<'_>, addr: u64, ino: u64, buf: &mut Vec<u8>) -> Option<PathBuf> {
    loop {
        let mut q = ProcmapQuery {
            query_flags: FILE_BACKED_VMA,
            query_addr: addr,
            ..Default::default()
        };
        match procmap_query(maps, &mut q, Some(buf.as_mut_slice())) {
            Ok(()) => {
                if q.inode != ino {
                    return None;
                }
                let len = (q.vma_name_size as usize).saturating_sub(1).min(buf.len());
                let (name, _) = strip_deleted_bytes(&buf[..len]);
                return name.starts_with(b"/").then(|| path_of(name));
            }
            // A name longer than the buffer.
            Err(rustix::io::Errno::NAMETOOLONG | rustix::io::Errno::TOOBIG)
                if buf.len() < 1 << 20 =>
            {
                let longer = buf.len() * 2;
                buf.resize(longer, 0);
            }
            Err(_) => return None,
        }
    }
}

/// [`crate::procs::held_names`] through `/proc`.
pub(crate) fn held_names(held: &[HeldRef]) -> Vec<Option<PathBuf>> {
    held_names_in(Path::new(PROC), held)
}

/// [`held_names`] over another proc mount (tests). Each process is opened once for all that
/// is asked of it.
pub(crate) fn held_names_in(proc_root: &Path, held: &[HeldRef]) -> Vec<Option<PathBuf>> {
    let mut out = vec![None; held.len()];
    let Ok(root) = open_dir(rustix::fs::CWD, proc_root) else {
        return out;
    };
    let mut order: Vec<usize> = (0..held.len()).collect();
    order.sort_unstable_by_key(|&i| (held[i].pid, held[i].start_time, held[i].how));
    let mut s = Scratch::new();
    for group in order
        .chunk_by(|&a, &b| (held[a].pid, held[a].start_time) == (held[b].pid, held[b].start_time))
    {
        let first = &held[group[0]];
        let Some(dir) = same_process(root.as_fd(), first.pid, first.start_time, &mut s) else {
            continue;
        };
        let fd_dir = open_dir(dir.as_fd(), c"fd").ok();
        let maps = openat(
            dir.as_fd(),
            c"maps",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok();
        for &i in group {
            let h = &held[i];
            out[i] = match h.how {
                HeldHow::Fd { fd, .. } => fd_dir
                    .as_ref()
                    .and_then(|d| fd_name(d.as_fd(), fd, h, &mut s)),
                HeldHow::Map { addr } => maps
                    .as_ref()
                    .and_then(|m| map_name(m.as_fd(), addr, h.ino, &mut s.link)),
            };
        }
    }
    out
}

/// `/proc/<pid>` of the process `pid` that started at `start_time`, or `None` when that process
/// is gone.
fn same_process(
    root: BorrowedFd<'_>,
    pid: u32,
    start_time: u64,
    s: &mut Scratch,
) -> Option<OwnedFd> {
    let dir = open_dir(root, pid.to_string()).ok()?;
    read_record(dir.as_fd(), c"stat", &mut s.file).ok()?;
    (parse_stat(&s.file)?.start_time == start_time).then_some(dir)
}

/// The name of descriptor `fd` in the open `fd_dir`, when it still holds the file `h` is (read
/// before the identity is checked again, so a descriptor closed and reused meanwhile is
/// never named for the file it held).
fn fd_name(fd_dir: BorrowedFd<'_>, fd: u32, h: &HeldRef, s: &mut Scratch) -> Option<PathBuf> {
    s.name.clear();
    write!(s.name, "{fd}\0").ok()?;
    let name = CStr::from_bytes_with_nul(&s.name).ok()?;
    let target = read_link(fd_dir, name, &mut s.link)?;
    // Anonymous inodes (memfd names aside) are not paths.
    if !target.starts_with(b"/") {
        return None;
    }
    let path = path_of(strip_deleted_bytes(target).0);
    let st = statat(fd_dir, name, AtFlags::empty()).ok()?;
    ((st.st_dev, st.st_ino) == (h.dev, h.ino)).then_some(path)
}

/// [`crate::procs::held_below`] through the kernel's leases (`super::lease`), asking about
/// each regular file at or below `path` in turn.
pub(crate) fn held_below(path: &Path, devino: Option<(u64, u64)>, budget: &mut usize) -> HeldBelow {
    let mut out = HeldBelow {
        files: Vec::new(),
        complete: true,
    };
    held_at(path, devino, budget, 0, &mut out);
    out.files.sort_unstable();
    out.files.dedup();
    out
}

/// Deeper than this, a tree is left to what the kernel cannot tell.
const MAX_DEPTH: usize = 64;

/// [`held_below`] of one path (looked at without following a link) into `out`.
fn held_at(
    path: &Path,
    devino: Option<(u64, u64)>,
    budget: &mut usize,
    depth: usize,
    out: &mut HeldBelow,
) {
    let st = match rustix::fs::lstat(path) {
        Ok(st) => st,
        // Nothing is there to hold, unless an identity was asked about: that file may be held
        // under another name.
        Err(rustix::io::Errno::NOENT) if devino.is_none() => return,
        Err(_) => return out.complete = false,
    };
    let here = (st.st_dev, st.st_ino);
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => {
            match super::lease::holders(path, Some(devino.unwrap_or(here)), budget) {
                Holders::Nobody => {}
                Holders::Someone => out.files.push(here),
                Holders::CannotTell => out.complete = false,
            }
        }
        rustix::fs::FileType::Directory => {
            // Every directory read spends the budget too, as the kernel's question does.
            let Some(left) = budget.checked_sub(1).filter(|_| depth <= MAX_DEPTH) else {
                return out.complete = false;
            };
            *budget = left;
            let Some(names) = dir_names(path) else {
                return out.complete = false;
            };
            for name in names {
                held_at(&path.join(name), None, budget, depth + 1, out);
                if !out.complete {
                    return;
                }
            }
        }
        // A link, a pipe, a socket or a device is never what a process holds open as a file.
        _ => {}
    }
}

/// The names in directory `path` (`.` and `..` left out), read without changing its access
/// time where this user may ask so; `None` when it cannot be read.
fn dir_names(path: &Path) -> Option<Vec<std::ffi::OsString>> {
    use rustix::fs::{openat, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = match openat(
        rustix::fs::CWD,
        path,
        flags | OFlags::NOATIME,
        Mode::empty(),
    ) {
        Err(rustix::io::Errno::PERM) => openat(rustix::fs::CWD, path, flags, Mode::empty()),
        opened => opened,
    }
    .ok()?;
    let mut buf = vec![std::mem::MaybeUninit::uninit(); 8192];
    let mut entries = rustix::fs::RawDir::new(&dir, &mut buf);
    let mut names = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry.ok()?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Some(names)
}

/// File systems whose every file has the file system's own device as `st_dev` (the one the
/// mount table gives). Elsewhere (btrfs subvolumes, overlayfs, network and FUSE file systems)
/// a file's device need not be its mount's, and [`devices_below`] does not tell.
const ONE_DEVICE_FILE_SYSTEMS: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "tmpfs", "ramfs", "f2fs", "vfat", "msdos", "exfat", "ntfs3",
    "jfs", "hfsplus", "nilfs2",
];

/// [`crate::procs::devices_below`] from this process's mount table.
pub(crate) fn devices_below(path: &Path) -> Option<Vec<u64>> {
    let text = std::fs::read(Path::new(PROC).join("self/mountinfo")).ok()?;
    devices_below_in(path, &text)
}

/// [`devices_below`] with the mount table's text given.
pub(crate) fn devices_below_in(path: &Path, mountinfo: &[u8]) -> Option<Vec<u64>> {
    // As the kernel names it: the parent resolved (a name's own link is never followed).
    let name = path.file_name()?;
    let at = std::fs::canonicalize(path.parent()?).ok()?.join(name);
    let mounts: Vec<Mount> = mountinfo
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(parse_mountinfo_line)
        .collect::<Option<_>>()?;
    // The mount holding `at`: the last (topmost) of the deepest mount points above it.
    let holding = mounts
        .iter()
        .filter(|m| at.starts_with(&m.point))
        .max_by_key(|m| m.point.components().count())?;
    let mut devices = vec![];
    for m in std::iter::once(holding).chain(mounts.iter().filter(|m| m.point.starts_with(&at))) {
        if !ONE_DEVICE_FILE_SYSTEMS.contains(&m.fstype.as_str()) {
            return None;
        }
        devices.push(m.dev);
    }
    devices.sort_unstable();
    devices.dedup();
    Some(devices)
}

/// One line of `/proc/<pid>/mountinfo`, what [`devices_below`] needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    dev: u64,
    point: PathBuf,
    fstype: String,
}

/// `ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER-OPTIONS`,
/// the mount point with `\ooo` octal escapes (space, tab, newline, backslash).
fn parse_mountinfo_line(line: &[u8]) -> Option<Mount> {
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let (major, minor) = std::str::from_utf8(fields.get(2)?).ok()?.split_once(':')?;
    let dash = fields.iter().skip(6).position(|f| *f == b"-")? + 6;
    Some(Mount {
        dev: rustix::fs::makedev(major.parse().ok()?, minor.parse().ok()?),
        point: PathBuf::from(OsStr::from_bytes(&unescape_octal(fields.get(4)?))),
        fstype: String::from_utf8_lossy(fields.get(dash + 1)?).into_owned(),
    })
}

/// `\ooo` (three octal digits) read as the byte it writes.
fn unescape_octal(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')));
        match octal.and_then(|v| u8::try_from(v).ok()) {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_table_tells_the_devices_below_a_path_or_that_it_cannot() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let p = |s: &str| root.join(s).display().to_string().replace(' ', "\\040");
        std::fs::create_dir_all(root.join("home/a b/vms")).unwrap();
        let table = format!(
            "22 1 254:0 / / rw - ext4 /dev/vda rw\n\
             30 22 0:41 / {} rw - tmpfs tmpfs rw\n\
             31 22 0:42 / {} rw shared:7 - xfs /dev/vdb rw\n\
             32 22 0:43 / {} rw - ext4 /dev/vdc rw\n",
            p("home/a b"),
            p("home/a b/vms/m1"),
            p("elsewhere"),
        );
        let at = |s: &str| devices_below_in(&root.join(s), table.as_bytes());
        let dev = rustix::fs::makedev;
        assert_eq!(at("home/a b/vms"), Some(vec![dev(0, 41), dev(0, 42)]));
        assert_eq!(at("home"), Some(vec![dev(0, 41), dev(0, 42), dev(254, 0)]));
        // Not below anything else mounted: only the file system holding it.
        std::fs::create_dir_all(root.join("other")).unwrap();
        assert_eq!(at("other"), Some(vec![dev(254, 0)]));
        let btrfs = table.replace("xfs", "btrfs");
        assert_eq!(devices_below_in(&root.join("home"), btrfs.as_bytes()), None);
        assert_eq!(devices_below_in(&root.join("other"), b"garbage"), None);
    }
}
