//! Linux processes through `/proc`.
//!
//! Every numeric entry of `/proc` is a thread-group leader (threads live under
//! `/proc/<pid>/task` and are not listed by `readdir`), so reading the directory skips threads.
//! What cannot be read for lack of permission is left empty (`exe: None`, no environment,
//! `fds_readable: false`); a process that disappears while it is read is left out.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{OpenFile, RawProcess};

const PROC: &str = "/proc";

/// Every process visible in `/proc`, threads excluded.
pub(crate) fn list_processes() -> Vec<RawProcess> {
    list_processes_in(Path::new(PROC))
}

/// [`list_processes`] over another proc mount (tests, containers).
pub(crate) fn list_processes_in(proc_root: &Path) -> Vec<RawProcess> {
    let Ok(entries) = fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter()
        .filter_map(|pid| read_process(proc_root, pid))
        .collect()
}

/// One process, or `None` when it does not exist (or vanished while being read).
pub(crate) fn read_process(proc_root: &Path, pid: u32) -> Option<RawProcess> {
    let dir = proc_root.join(pid.to_string());
    let stat = parse_stat(&fs::read(dir.join("stat")).ok()?)?;
    let uid = match fs::read(dir.join("status")) {
        Ok(s) => parse_status_uid(&s)?,
        Err(_) => return None,
    };
    let cmdline = match fs::read(dir.join("cmdline")) {
        Ok(c) => c,
        Err(e) if gone(&e) => return None,
        // Permission problems on cmdline are unusual; keep the process with an empty argv.
        Err(_) => Vec::new(),
    };
    let argv = split_nul(&cmdline);
    // Kernel threads (children of kthreadd, or kthreadd itself) have no user memory: no argv,
    // no environment, no files worth reading.
    let kernel_thread = argv.is_empty() && (stat.ppid == 2 || pid == 2);

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
        p.exe = fs::read_link(dir.join("exe")).ok();
        if let Ok(env) = fs::read(dir.join("environ")) {
            let (home, data_dir) = parse_environ(&env);
            p.env_home = home;
            p.env_smolvm_data_dir = data_dir;
        }
        match read_open_files(&dir.join("fd")) {
            Some(files) => {
                p.open_files = files;
                p.fds_readable = true;
            }
            None => p.fds_readable = false,
        }
        p.cwd = fs::read_link(dir.join("cwd")).ok();
        p.root = fs::read_link(dir.join("root")).ok();
        if let Ok(maps) = fs::read(dir.join("maps")) {
            p.mapped = parse_maps(&maps);
        }
    }
    // The pid may have exited (or even been reused) while we read it: keep only a process
    // whose stat still shows the same start time.
    let again = parse_stat(&fs::read(dir.join("stat")).ok()?)?;
    (again.start_time == p.start_time).then_some(p)
}

fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

/// Regular files open in `/proc/<pid>/fd`, or `None` when the directory cannot be read.
fn read_open_files(fd_dir: &Path) -> Option<Vec<OpenFile>> {
    let entries = fs::read_dir(fd_dir).ok()?;
    let mut files = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let fd_path = entry.path();
        let Ok(target) = fs::read_link(&fd_path) else {
            continue;
        };
        // Sockets, pipes and anonymous inodes are not paths.
        if !target.as_os_str().as_bytes().starts_with(b"/") {
            continue;
        }
        // `stat` through the magic link reaches the open inode even when it is unlinked.
        let Ok(meta) = fs::metadata(&fd_path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let (path, suffixed) = strip_deleted_suffix(&target);
        files.push(OpenFile {
            path,
            // The kernel appends ` (deleted)` once the name is unlinked; the inode is only
            // really gone (its blocks held by this process alone) when no link remains.
            deleted: suffixed && meta.nlink() == 0,
            dev: meta.dev(),
            ino: meta.ino(),
            allocated: meta.blocks() * 512,
        });
    }
    Some(files)
}

/// The unlinked files process `pid` holds open, each inode once: `((st_dev, st_ino),
/// allocated bytes)`. Empty when its descriptors cannot be read.
pub(crate) fn deleted_open_files(pid: u32) -> Vec<((u64, u64), u64)> {
    let mut seen = std::collections::BTreeMap::new();
    for f in read_open_files(Path::new(&format!("/proc/{pid}/fd"))).unwrap_or_default() {
        if f.deleted {
            seen.insert((f.dev, f.ino), f.allocated);
        }
    }
    seen.into_iter().collect()
}

/// Splits a `/proc/<pid>/fd/N` link target into the path and whether it ended in ` (deleted)`.
pub(crate) fn strip_deleted_suffix(target: &Path) -> (PathBuf, bool) {
    const SUFFIX: &[u8] = b" (deleted)";
    let bytes = target.as_os_str().as_bytes();
    match bytes.strip_suffix(SUFFIX) {
        Some(rest) => (PathBuf::from(OsStr::from_bytes(rest)), true),
        None => (target.to_path_buf(), false),
    }
}

/// The distinct files named in `/proc/<pid>/maps` (the sixth field, an absolute path; a
/// ` (deleted)` suffix removed). Pseudo entries (`[heap]`, `[stack]`) are not files.
pub(crate) fn parse_maps(bytes: &[u8]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for line in bytes.split(|b| *b == b'\n') {
        // address perms offset dev inode pathname; the pathname may contain spaces.
        let mut rest = line;
        for _ in 0..5 {
            let Some(sp) = rest.iter().position(|b| *b == b' ') else {
                rest = &[];
                break;
            };
            rest = &rest[sp + 1..];
            while rest.first() == Some(&b' ') {
                rest = &rest[1..];
            }
        }
        if rest.first() != Some(&b'/') {
            continue;
        }
        let (path, _) = strip_deleted_suffix(Path::new(OsStr::from_bytes(rest)));
        if out.last() != Some(&path) && seen.insert(path.clone()) {
            out.push(path);
        }
    }
    out
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
