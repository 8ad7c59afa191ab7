//! Linux processes through `/proc`.
//!
//! Every numeric entry of `/proc` is a thread-group leader (threads live under
//! `/proc/<pid>/task` and are not listed by `readdir`), so reading the directory skips threads.
//! What cannot be read for lack of permission is left empty (`exe: None`, no environment,
//! `fds_readable: false`); a process that disappears while it is read is left out.

use std::ffi::{CStr, OsStr};
use std::fs;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fs::{openat, readlinkat_raw, statat, AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::{OpenFile, RawProcess};

mod holdings;
mod lease;
mod table_memo;
#[cfg(test)]
pub(crate) use holdings::holdings_in;
pub(crate) use holdings::{devices_below, held_below, held_names, holdings};
pub(crate) use lease::{holders, holders_of_open};
pub(crate) use table_memo::TableMemo;

const PROC: &str = "/proc";

/// Below this many processes the table is read on the calling thread alone (a thread costs
/// more to start than a few dozen processes cost to read).
const PARALLEL_FROM: usize = 48;
/// Processes a reading thread takes at a time from the shared list.
const CHUNK: usize = 8;

/// Every process visible in `/proc`, threads excluded.
pub(crate) fn list_processes() -> Vec<RawProcess> {
    list_processes_in(Path::new(PROC))
}

/// How much of each process a read takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Everything the "in use" rule asks: open files, working and root directories, maps.
    Whole,
    /// Identity, owner, command line, working and root directories of every process;
    /// everything only of a process shaped like a VMM (whose files decide whose VM it is and
    /// what it holds). Whether anyone else holds a file open is asked of the kernel
    /// ([`holders`]) before the rest of the table is read.
    Identities,
}

/// Every process's identity and command line, and everything of the VMM-shaped ones
/// ([`Depth::Identities`]): what a scan needs when it has no path to judge.
pub(crate) fn list_identities() -> Vec<RawProcess> {
    list_processes_at(Path::new(PROC), Depth::Identities)
}

/// [`list_processes`] over another proc mount (tests, containers).
///
/// Processes are read in parallel (at most one thread per core, four at most) through
/// descriptors: each `/proc/<pid>` directory is opened once and everything of that process is
/// read relative to it, so no path is built or looked up twice, and a process that exits while
/// it is read stays gone even if its pid is reused meanwhile.
pub(crate) fn list_processes_in(proc_root: &Path) -> Vec<RawProcess> {
    list_processes_at(proc_root, Depth::Whole)
}

/// [`list_processes_in`], each process read to `depth`.
pub(crate) fn list_processes_at(proc_root: &Path, depth: Depth) -> Vec<RawProcess> {
    read_table(proc_root, |root, pid, ino, s| {
        read_at(root, pid, depth, s).map(|p| RawProcess { proc_ino: ino, ..p })
    })
    .into_iter()
    .map(|(_, p)| p)
    .collect()
}

/// `each` of every pid of `proc_root` (given the open mount, the pid, the inode number the
/// listing gave its directory and the thread's buffers), in parallel as [`list_processes_in`]
/// describes, by pid; `None` from `each` leaves it out.
fn read_table<T: Send>(
    proc_root: &Path,
    each: impl Fn(BorrowedFd<'_>, u32, u64, &mut Scratch) -> Option<T> + Sync,
) -> Vec<(u32, T)> {
    let Ok(root) = open_dir(rustix::fs::CWD, proc_root) else {
        return Vec::new();
    };
    let mut scratch = Scratch::new();
    let mut pids: Vec<(u32, u64)> = Vec::new();
    {
        let mut dir = RawDir::new(&root, &mut scratch.dents);
        while let Some(Ok(e)) = dir.next() {
            if let Some(pid) = e.file_name().to_str().ok().and_then(|n| n.parse().ok()) {
                pids.push((pid, e.ino()));
            }
        }
    }
    pids.sort_unstable();
    let threads = if pids.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    };
    let next = AtomicUsize::new(0);
    let work = |scratch: &mut Scratch| {
        let mut mine = Vec::new();
        loop {
            let at = next.fetch_add(CHUNK, Ordering::Relaxed);
            let Some(chunk) = pids.get(at..(at + CHUNK).min(pids.len())) else {
                break;
            };
            if chunk.is_empty() {
                break;
            }
            mine.extend(
                chunk
                    .iter()
                    .filter_map(|&(pid, ino)| Some((pid, each(root.as_fd(), pid, ino, scratch)?))),
            );
        }
        mine
    };
    let mut all = std::thread::scope(|s| {
        // The calling thread reads too, so a thread that cannot be started costs nothing but
        // time: every pid is taken by whichever thread runs.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("smolsweep-procs".into())
                    .spawn_scoped(s, || work(&mut Scratch::new()))
                    .ok()
            })
            .collect();
        let mut all = work(&mut scratch);
        for h in helpers {
            match h.join() {
                Ok(v) => all.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(pid, _)| *pid);
    all
}

/// Reusable buffers of one reading thread.
struct Scratch {
    /// File contents (`stat`, `status`, `cmdline`, `maps`, `environ`).
    file: Vec<u8>,
    /// One link target.
    link: Vec<u8>,
    /// `getdents64` records.
    dents: Vec<MaybeUninit<u8>>,
    /// A relative path being built (`<tid>/schedstat`).
    name: Vec<u8>,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            file: Vec::with_capacity(16 * 1024),
            link: vec![0; 4096],
            dents: vec![MaybeUninit::uninit(); 16 * 1024],
            name: Vec::with_capacity(32),
        }
    }
}

fn open_dir(at: impl AsFd, path: impl rustix::path::Arg) -> Result<OwnedFd, Errno> {
    openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The whole of the file `name` in `dir`, into `buf`.
fn read_file(dir: BorrowedFd<'_>, name: &CStr, buf: &mut Vec<u8>) -> Result<(), Errno> {
    read_into(dir, name, buf, false)
}

/// [`read_file`] of a file the kernel writes as one record (`stat`, `status`): a `seq_file` of
/// one record answers a read with all of it when it fits, so a read that leaves the buffer
/// room had it all, and the read that would return 0 is not made.
fn read_record(dir: BorrowedFd<'_>, name: &CStr, buf: &mut Vec<u8>) -> Result<(), Errno> {
    read_into(dir, name, buf, true)
}

fn read_into(
    dir: BorrowedFd<'_>,
    name: &CStr,
    buf: &mut Vec<u8>,
    one_record: bool,
) -> Result<(), Errno> {
    buf.clear();
    let fd = openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(buf.capacity().max(4096));
        }
        let room = buf.capacity() - buf.len();
        match rustix::io::read(&fd, rustix::buffer::spare_capacity(buf)) {
            Ok(0) => return Ok(()),
            Ok(n) if one_record && n < room => return Ok(()),
            Ok(_) => {}
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The target of the link `name` in `dir`, into `buf` (grown when the target is longer).
fn read_link<'b>(dir: BorrowedFd<'_>, name: &CStr, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    loop {
        let n = readlinkat_raw(dir, name, buf.as_mut_slice()).ok()?;
        if n < buf.len() {
            return Some(&buf[..n]);
        }
        let longer = buf.len() * 2;
        buf.resize(longer, 0);
    }
}

fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// One process, or `None` when it does not exist (or vanished while being read).
#[cfg(test)]
pub(crate) fn read_process(proc_root: &Path, pid: u32) -> Option<RawProcess> {
    let root = open_dir(rustix::fs::CWD, proc_root).ok()?;
    let p = read_at(root.as_fd(), pid, Depth::Whole, &mut Scratch::new())?;
    // The number `/proc` lists its directory under, as a read of the whole table keeps it.
    let proc_ino = statat(&root, pid.to_string(), AtFlags::empty())
        .ok()?
        .st_ino;
    Some(RawProcess { proc_ino, ..p })
}

/// [`read_process`] relative to an open proc mount.
fn read_at(root: BorrowedFd<'_>, pid: u32, depth: Depth, s: &mut Scratch) -> Option<RawProcess> {
    let dir = open_dir(root, pid.to_string()).ok()?;
    let dir = dir.as_fd();
    read_record(dir, c"stat", &mut s.file).ok()?;
    let stat = parse_stat(&s.file)?;
    read_rest(dir, pid, stat, depth, s)
}

/// The process whose `/proc/<pid>` is open as `dir` and whose `stat` was just read as `stat`:
/// everything else the scan asks of it (to `depth`), `None` when it vanished (or its pid was
/// reused) while it was read.
fn read_rest(
    dir: BorrowedFd<'_>,
    pid: u32,
    stat: Stat,
    depth: Depth,
    s: &mut Scratch,
) -> Option<RawProcess> {
    read_record(dir, c"status", &mut s.file).ok()?;
    let uid = parse_status_uid(&s.file)?;
    let argv = match read_file(dir, c"cmdline", &mut s.file) {
        Ok(()) => split_nul(&s.file),
        Err(e) if gone(e) => return None,
        // Permission problems on cmdline are unusual; keep the process with an empty argv.
        Err(_) => Vec::new(),
    };
    let kernel_thread = is_kernel_thread(pid, stat.ppid, &argv);

    let mut p = RawProcess {
        pid,
        ppid: stat.ppid,
        uid,
        start_time: stat.start_time,
        comm: stat.comm,
        argv,
        ..Default::default()
    };
    if !kernel_thread {
        let vmm = super::shape::may_be_vmm(&p);
        if depth == Depth::Whole || vmm {
            read_uses(dir, &mut p, s);
        } else {
            read_places(dir, &mut p, s);
        }
        // Only a VMM's executable and environment decide anything (whose HOME started it).
        if vmm {
            p.exe = read_link(dir, c"exe", &mut s.link).map(path_of);
            if read_file(dir, c"environ", &mut s.file).is_ok() {
                let (home, data_dir) = parse_environ(&s.file);
                p.env_home = home;
                p.env_smolvm_data_dir = data_dir;
            }
        }
    }
    // The process may have ended while it was read: keep it only if it is still there now.
    // Everything was read through its own directory, which never shows another process (had
    // its pid been reused meanwhile, the reads would have failed), so its name still being
    // there is enough.
    statat(dir, c"stat", AtFlags::empty()).ok()?;
    Some(p)
}

/// Kernel threads (children of kthreadd, or kthreadd itself) have no user memory: no argv, no
/// environment, no files worth reading.
fn is_kernel_thread(pid: u32, ppid: u32, argv: &[String]) -> bool {
    argv.is_empty() && (ppid == 2 || pid == 2)
}

/// What the "in use" rule asks of a process: its open files, working and root directories and
/// mapped files.
fn read_uses(dir: BorrowedFd<'_>, p: &mut RawProcess, s: &mut Scratch) {
    match read_open_files_at(dir, s) {
        Some(files) => {
            p.open_files = files;
            p.fds_readable = true;
        }
        None => p.fds_readable = false,
    }
    read_places(dir, p, s);
    if read_file(dir, c"maps", &mut s.file).is_ok() {
        p.mapped = parse_maps(&s.file);
    }
}

/// A process's working and root directories.
fn read_places(dir: BorrowedFd<'_>, p: &mut RawProcess, s: &mut Scratch) {
    p.cwd = read_link(dir, c"cwd", &mut s.link).map(path_of);
    p.root = read_link(dir, c"root", &mut s.link).map(path_of);
}

fn gone(e: Errno) -> bool {
    e == Errno::NOENT || e == Errno::SRCH
}

/// Regular files open in `<pid dir>/fd`, or `None` when the directory cannot be read.
fn read_open_files_at(pid_dir: BorrowedFd<'_>, s: &mut Scratch) -> Option<Vec<OpenFile>> {
    let mut files = Vec::new();
    let Scratch { dents, link, .. } = s;
    each_open_file(pid_dir, dents, |fd_dir, name, st| {
        let Some(target) = read_link(fd_dir, name, link) else {
            return;
        };
        // Anonymous inodes (memfd names aside) are not paths.
        if !target.starts_with(b"/") {
            return;
        }
        let (path, suffixed) = strip_deleted_bytes(target);
        files.push(OpenFile {
            path: path_of(path),
            // The kernel appends ` (deleted)` once the name is unlinked; the inode is only
            // really gone (its blocks held by this process alone) when no link remains.
            deleted: suffixed && st.st_nlink == 0,
            dev: st.st_dev,
            ino: st.st_ino,
            allocated: (st.st_blocks as u64).saturating_mul(512),
        });
    })?;
    Some(files)
}

/// Each regular file open in `<pid dir>/fd`: the open `fd` directory, the descriptor's entry
/// name and what `stat` through it says. `None` when the directory cannot be read.
///
/// `stat` through the magic link reaches the open inode even when it is unlinked, and is asked
/// first: sockets, pipes, devices and directories (never in the index) cost one system call.
fn each_open_file(
    pid_dir: BorrowedFd<'_>,
    dents: &mut [MaybeUninit<u8>],
    mut each: impl FnMut(BorrowedFd<'_>, &CStr, &rustix::fs::Stat),
) -> Option<()> {
    let fd_dir = open_dir(pid_dir, c"fd").ok()?;
    let mut entries = RawDir::new(&fd_dir, dents);
    while let Some(entry) = entries.next() {
        // An unreadable entry ends the listing (the process is gone or the table changed).
        let Ok(entry) = entry else { break };
        let name = entry.file_name();
        if name.to_bytes().first() == Some(&b'.') {
            continue;
        }
        let Ok(st) = statat(&fd_dir, name, AtFlags::empty()) else {
            continue;
        };
        if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile {
            each(fd_dir.as_fd(), name, &st);
        }
    }
    Some(())
}

/// The unlinked files process `pid` holds open, each inode once: `((st_dev, st_ino),
/// allocated bytes)`. Empty when its descriptors cannot be read.
pub(crate) fn deleted_open_files(pid: u32) -> Vec<((u64, u64), u64)> {
    let mut seen = std::collections::BTreeMap::new();
    let Ok(dir) = open_dir(rustix::fs::CWD, format!("{PROC}/{pid}")) else {
        return Vec::new();
    };
    let files = read_open_files_at(dir.as_fd(), &mut Scratch::new());
    for f in files.unwrap_or_default() {
        if f.deleted {
            seen.insert((f.dev, f.ino), f.allocated);
        }
    }
    seen.into_iter().collect()
}

/// A link target's bytes without a ` (deleted)` suffix, and whether it had one.
fn strip_deleted_bytes(target: &[u8]) -> (&[u8], bool) {
    match target.strip_suffix(b" (deleted)") {
        Some(rest) => (rest, true),
        None => (target, false),
    }
}

/// Splits a `/proc/<pid>/fd/N` link target into the path and whether it ended in ` (deleted)`.
#[cfg(test)]
pub(crate) fn strip_deleted_suffix(target: &Path) -> (PathBuf, bool) {
    let (path, suffixed) = strip_deleted_bytes(target.as_os_str().as_bytes());
    (path_of(path), suffixed)
}

/// The distinct files named in `/proc/<pid>/maps` (the sixth field, an absolute path; a
/// ` (deleted)` suffix removed). Pseudo entries (`[heap]`, `[stack]`) are not files.
///
/// The kernel writes a newline in a mapped file's name as `\012` (and nothing else escaped, so
/// a name may also hold those four characters literally): such a name is listed both as
/// written and with `\012` read as a newline.
pub(crate) fn parse_maps(bytes: &[u8]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    let mut last: &[u8] = &[];
    for line in bytes.split(|b| *b == b'\n') {
        let Some(name) = maps_path(line) else {
            continue;
        };
        let (name, _) = strip_deleted_bytes(name);
        if name == last || !seen.insert(name) {
            continue;
        }
        last = name;
        out.push(path_of(name));
        if let Some(unescaped) = unescape_newlines(name) {
            out.push(PathBuf::from(std::ffi::OsString::from_vec(unescaped)));
        }
    }
    out
}

/// The path field of one `maps` line: address perms offset dev inode pathname, where the
/// pathname may contain spaces. `None` for anonymous and pseudo mappings.
fn maps_path(line: &[u8]) -> Option<&[u8]> {
    let mut rest = line;
    for _ in 0..5 {
        let sp = rest.iter().position(|b| *b == b' ')?;
        rest = &rest[sp + 1..];
        while rest.first() == Some(&b' ') {
            rest = &rest[1..];
        }
    }
    (rest.first() == Some(&b'/')).then_some(rest)
}

/// `name` with every `\012` read as a newline, when it has one.
fn unescape_newlines(name: &[u8]) -> Option<Vec<u8>> {
    const ESCAPED: &[u8] = b"\\012";
    name.windows(ESCAPED.len()).any(|w| w == ESCAPED).then(|| {
        let mut out = Vec::with_capacity(name.len());
        let mut rest = name;
        while !rest.is_empty() {
            if rest.starts_with(ESCAPED) {
                out.push(b'\n');
                rest = &rest[ESCAPED.len()..];
            } else {
                out.push(rest[0]);
                rest = &rest[1..];
            }
        }
        out
    })
}

/// The fields of `/proc/<pid>/stat` this module uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    pub comm: String,
    pub ppid: u32,
    /// Field 22: clock ticks since boot.
    pub start_time: u64,
}

/// Parses `/proc/<pid>/stat`. The comm (field 2) may contain spaces and parentheses, so the
/// numeric fields are read after the **last** `)`.
pub(crate) fn parse_stat(bytes: &[u8]) -> Option<Stat> {
    let open = bytes.iter().position(|&b| b == b'(')?;
    let close = bytes.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let comm = String::from_utf8_lossy(&bytes[open + 1..close]).into_owned();
    let rest = std::str::from_utf8(&bytes[close + 1..]).ok()?;
    // rest starts at field 3 (state): field N is index N - 3.
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let ppid = fields.get(4 - 3)?.parse().ok()?;
    let start_time = fields.get(22 - 3)?.parse().ok()?;
    Some(Stat {
        comm,
        ppid,
        start_time,
    })
}

/// The real uid from `/proc/<pid>/status` (`Uid:\t<real>\t<effective>\t…`).
pub(crate) fn parse_status_uid(bytes: &[u8]) -> Option<u32> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_ascii_whitespace().next()?.parse().ok())
}

/// Splits NUL-separated data (`cmdline`) into strings; non-UTF-8 bytes are replaced.
pub(crate) fn split_nul(bytes: &[u8]) -> Vec<String> {
    let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// `HOME` and `SMOLVM_DATA_DIR` from `/proc/<pid>/environ` (empty values count as unset).
pub(crate) fn parse_environ(bytes: &[u8]) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut home = None;
    let mut data_dir = None;
    for var in bytes.split(|&b| b == 0) {
        let value = |prefix: &[u8]| {
            var.strip_prefix(prefix)
                .filter(|v| !v.is_empty())
                .map(|v| PathBuf::from(OsStr::from_bytes(v)))
        };
        if let Some(v) = value(b"HOME=") {
            home = Some(v);
        } else if let Some(v) = value(b"SMOLVM_DATA_DIR=") {
            data_dir = Some(v);
        }
    }
    (home, data_dir)
}

/// `/proc/<pid>/stat` field 22 (clock ticks since boot), for identity checks (pid + start time).
pub(crate) fn process_start_time(pid: u32) -> Option<u64> {
    let bytes = fs::read(Path::new(PROC).join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&bytes).map(|s| s.start_time)
}

/// Whether `pid` is still the process that had `start_time` (guards signals against PID reuse).
#[cfg(test)]
pub fn is_same_process(pid: u32, start_time: u64) -> bool {
    process_start_time(pid) == Some(start_time)
}

/// Clock ticks per second (`USER_HZ`, from the auxiliary vector), the unit of start times.
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// Boot time in seconds since the epoch (`btime` in `/proc/stat`).
pub fn boot_time_secs() -> Option<u64> {
    parse_btime(&fs::read_to_string(Path::new(PROC).join("stat")).ok()?)
}

/// `btime` from the text of `/proc/stat`.
pub fn parse_btime(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// A start time (clock ticks since boot) as seconds since the epoch.
pub fn start_time_epoch_secs(start_time: u64) -> Option<u64> {
    Some(boot_time_secs()? + start_time / clock_ticks_per_second().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_comm_with_spaces_and_parens() {
        let line = b"4242 (a) b (c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a) b (c");
        assert_eq!(s.ppid, 17);
        assert_eq!(s.start_time, 987654);
    }

    #[test]
    fn stat_truncated_is_none() {
        assert_eq!(parse_stat(b"1 (x) S 0 1"), None);
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn status_real_uid() {
        let status = b"Name:\tx\nPPid:\t1\nUid:\t1000\t0\t0\t0\nGid:\t1\t1\t1\t1\n";
        assert_eq!(parse_status_uid(status), Some(1000));
    }

    #[test]
    fn cmdline_split() {
        assert_eq!(
            split_nul(b"/proc/self/exe\0_boot-vm\0/a b/boot-config.json\0"),
            vec!["/proc/self/exe", "_boot-vm", "/a b/boot-config.json"]
        );
        assert!(split_nul(b"").is_empty());
        assert_eq!(split_nul(b"a\0\0b\0"), vec!["a", "", "b"]);
    }

    #[test]
    fn environ_home_and_data_dir() {
        let env = b"PATH=/bin\0HOME=/home/u\0SMOLVM_DATA_DIR=/srv/smol\0XHOME=/nope\0";
        let (h, d) = parse_environ(env);
        assert_eq!(h, Some(PathBuf::from("/home/u")));
        assert_eq!(d, Some(PathBuf::from("/srv/smol")));
        assert_eq!(parse_environ(b"HOME=\0"), (None, None));
    }

    #[test]
    fn deleted_suffix() {
        assert_eq!(
            strip_deleted_suffix(Path::new("/d/storage.raw (deleted)")),
            (PathBuf::from("/d/storage.raw"), true)
        );
        assert_eq!(
            strip_deleted_suffix(Path::new("/d/storage.raw")),
            (PathBuf::from("/d/storage.raw"), false)
        );
    }

    #[test]
    fn maps_files_once_with_spaces_and_deleted() {
        let maps = b"5581a000-5581b000 r--p 00000000 08:01 131 /usr/bin/qemu\n\
5581b000-5581c000 r-xp 00001000 08:01 131 /usr/bin/qemu\n\
7f00-7f01 rw-s 00000000 00:05 77 /h/a disk.raw (deleted)\n\
7ffd-7ffe rw-p 00000000 00:00 0                          [stack]\n\
7ffe-7fff rw-p 00000000 00:00 0\n";
        assert_eq!(
            parse_maps(maps),
            vec![
                PathBuf::from("/usr/bin/qemu"),
                PathBuf::from("/h/a disk.raw")
            ]
        );
    }

    #[test]
    fn btime() {
        assert_eq!(
            parse_btime("cpu  1 2 3\nbtime 1764470000\nprocesses 5\n"),
            Some(1764470000)
        );
    }

    #[test]
    fn own_process_is_listed_with_its_start_time() {
        let me = std::process::id();
        let p = read_process(Path::new(PROC), me).expect("own /proc entry");
        assert_eq!(p.pid, me);
        assert_eq!(Some(p.start_time), process_start_time(me));
        assert_eq!(p.uid, rustix::process::getuid().as_raw());
        assert!(p.fds_readable);
        assert!(is_same_process(me, p.start_time));
        assert!(!is_same_process(me, p.start_time + 1));
    }
}
