//! A consistent, read-only, in-memory snapshot of a SQLite inventory that leaves no trace.
//!
//! Opening a database file through SQLite, even with `mode=ro`, advances the file's atime
//! (relatime updates it on the first read after a write) and, in WAL mode, maps and writes
//! read-marks into the `-shm` file. A scan must change no byte and no timestamp of what it
//! reads, so the inventory is read the way a SQLite reader would, but by hand:
//!
//! * the database (and, in WAL mode, its `-wal`) is opened `O_NOATIME` and read into memory;
//! * rollback-journal databases (Celesto) are read under SQLite's own SHARED lock, taken on the
//!   lock bytes with open-file-description locks, retried until a busy timeout: a writer that
//!   holds PENDING or EXCLUSIVE makes the reader wait, exactly like `busy_timeout`;
//! * WAL databases (smolvm) are read without locks; committed frames are applied from the
//!   `-wal` file after their checksums are verified (uncommitted or torn frames are ignored, as
//!   SQLite's own recovery does), and the read is retried if either file changed meanwhile;
//! * SQLite then opens the snapshot with `SQLITE_DESERIALIZE_READONLY` and `query_only`.
//!
//! Nothing is ever created, written, checkpointed or recovered, and `immutable=1` (which would
//! ignore committed data still in `-wal`) is never used.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::InventoryError;
use crate::upstream::SideFile;

/// How long a locked inventory is waited for.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

const PENDING_BYTE: i64 = 0x4000_0000;
const RESERVED_BYTE: i64 = PENDING_BYTE + 1;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

fn open_noatime(path: &Path) -> std::io::Result<File> {
    // A named pipe where the database or its -wal is expected would block a plain open.
    crate::fsread::open_regular(path)
}

#[cfg(target_os = "linux")]
const SETLK: libc::c_int = libc::F_OFD_SETLK;
#[cfg(target_os = "linux")]
const GETLK: libc::c_int = libc::F_OFD_GETLK;
#[cfg(not(target_os = "linux"))]
const SETLK: libc::c_int = libc::F_SETLK;
#[cfg(not(target_os = "linux"))]
const GETLK: libc::c_int = libc::F_GETLK;

/// A lock kind (`F_RDLCK`, `F_WRLCK`, `F_UNLCK`) as an int: libc's are `c_int` on Linux and
/// `c_short` on macOS.
fn kind_int(kind: impl Into<libc::c_int>) -> libc::c_int {
    kind.into()
}

fn flock_struct(kind: impl Into<libc::c_int>, start: i64, len: i64) -> libc::flock {
    // SAFETY: an all-zero flock is a valid value; the fields are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind_int(kind) as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start as _;
    fl.l_len = len as _;
    fl
}

/// Try to take (or release, with `F_UNLCK`) a lock on a byte range; false when it conflicts.
fn lock(f: &File, kind: impl Into<libc::c_int>, start: i64, len: i64) -> std::io::Result<bool> {
    let mut fl = flock_struct(kind, start, len);
    // SAFETY: fcntl with a valid fd and a pointer to a live flock struct.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), SETLK, &mut fl) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// Whether another process holds a lock that conflicts with a write lock on the range.
fn someone_holds(f: &File, start: i64, len: i64) -> bool {
    let mut fl = flock_struct(libc::F_WRLCK, start, len);
    // SAFETY: as above.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), GETLK, &mut fl) };
    rc == 0 && kind_int(fl.l_type) != kind_int(libc::F_UNLCK)
}

fn read_all(f: &mut File) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

fn stamp(path: &Path) -> Option<(u64, i64, i64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.size(), m.mtime(), m.mtime_nsec(), m.ino()))
}

fn corrupt(path: &Path, detail: impl Into<String>) -> InventoryError {
    InventoryError::Corrupt {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> InventoryError {
    InventoryError::Io {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// Read the database bytes, with committed WAL frames applied.
fn read_image(path: &Path, timeout: Duration) -> Result<Vec<u8>, InventoryError> {
    let deadline = Instant::now() + timeout;
    let wal = SideFile::Wal.beside(path);
    let journal = SideFile::Journal.beside(path);
    loop {
        let mut f = match open_noatime(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(InventoryError::Missing(path.to_path_buf()))
            }
            Err(e) => return Err(io(path, e)),
        };
        let mut header = [0u8; 100];
        let n = f.read(&mut header).map_err(|e| io(path, e))?;
        if n == 0 {
            // An empty file is what SQLite creates before the first write: an empty database.
            return Ok(Vec::new());
        }
        if n < 100 || &header[..16] != b"SQLite format 3\0" {
            return Err(corrupt(path, "not a SQLite database (bad header)"));
        }
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(0))
            .map_err(|e| io(path, e))?;
        let wal_mode = header[18] == 2 || header[19] == 2;
        if wal_mode {
            let before = (stamp(path), stamp(&wal));
            let mut img = read_all(&mut f).map_err(|e| io(path, e))?;
            let wal_bytes = match open_noatime(&wal) {
                Ok(mut w) => Some(read_all(&mut w).map_err(|e| io(&wal, e))?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io(&wal, e)),
            };
            if (stamp(path), stamp(&wal)) != before {
                if Instant::now() > deadline {
                    return Err(InventoryError::Locked {
                        path: path.to_path_buf(),
                        seconds: timeout.as_secs().max(1),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            if let Some(w) = wal_bytes {
                apply_wal(&mut img, &w);
            }
            return Ok(img);
        }
        // Rollback journal: SQLite's SHARED lock (PENDING briefly, then the SHARED range).
        let got = lock(&f, libc::F_RDLCK, PENDING_BYTE, 1).map_err(|e| io(path, e))? && {
            let shared =
                lock(&f, libc::F_RDLCK, SHARED_FIRST, SHARED_SIZE).map_err(|e| io(path, e))?;
            let _ = lock(&f, libc::F_UNLCK, PENDING_BYTE, 1);
            shared
        };
        if !got {
            if Instant::now() > deadline {
                return Err(InventoryError::Locked {
                    path: path.to_path_buf(),
                    seconds: timeout.as_secs().max(1),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let hot = std::fs::symlink_metadata(&journal).is_ok_and(|m| m.size() > 0)
            && !someone_holds(&f, RESERVED_BYTE, 1);
        if hot {
            return Err(io(
                path,
                "an interrupted write left a hot journal; the owning tool must open the inventory once to recover it",
            ));
        }
        let img = read_all(&mut f).map_err(|e| io(path, e))?;
        // Dropping the file releases the open-file-description locks.
        return Ok(img);
    }
}

/// Apply the committed frames of a WAL file to a database image (SQLite's recovery rules:
/// frames count only while salts match and the running checksum verifies, and only up to the
/// last commit frame).
pub(crate) fn apply_wal(img: &mut Vec<u8>, wal: &[u8]) {
    if wal.len() < 32 {
        return;
    }
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let magic = be32(&wal[0..4]);
    let big_endian = match magic {
        0x377f_0683 => true,
        0x377f_0682 => false,
        _ => return,
    };
    let page_size = match be32(&wal[8..12]) {
        1 => 65536usize,
        n => n as usize,
    };
    if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
        return;
    }
    let salt = (&wal[16..20], &wal[20..24]);
    let word = |b: &[u8]| {
        if big_endian {
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        } else {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }
    };
    let checksum = |data: &[u8], mut s0: u32, mut s1: u32| {
        for c in data.chunks_exact(8) {
            s0 = s0.wrapping_add(word(&c[0..4])).wrapping_add(s1);
            s1 = s1.wrapping_add(word(&c[4..8])).wrapping_add(s0);
        }
        (s0, s1)
    };
    let (h0, h1) = checksum(&wal[0..24], 0, 0);
    if (h0, h1) != (be32(&wal[24..28]), be32(&wal[28..32])) {
        return;
    }
    let (mut s0, mut s1) = (h0, h1);
    let frame = 24 + page_size;
    let mut pending: Vec<(u32, usize)> = Vec::new();
    let mut committed: Vec<(u32, usize)> = Vec::new();
    let mut db_pages = 0u32;
    let mut off = 32;
    while off + frame <= wal.len() {
        let fh = &wal[off..off + 24];
        if (&fh[8..12], &fh[12..16]) != salt {
            break;
        }
        let (a, b) = checksum(&fh[0..8], s0, s1);
        let (a, b) = checksum(&wal[off + 24..off + frame], a, b);
        if (a, b) != (be32(&fh[16..20]), be32(&fh[20..24])) {
            break;
        }
        s0 = a;
        s1 = b;
        pending.push((be32(&fh[0..4]), off + 24));
        let commit = be32(&fh[4..8]);
        if commit != 0 {
            committed.append(&mut pending);
            db_pages = commit;
        }
        off += frame;
    }
    if committed.is_empty() {
        return;
    }
    img.resize(db_pages as usize * page_size, 0);
    for (pgno, at) in committed {
        if pgno == 0 || pgno > db_pages {
            continue;
        }
        let start = (pgno as usize - 1) * page_size;
        img[start..start + page_size].copy_from_slice(&wal[at..at + page_size]);
    }
}

/// Open a read-only in-memory snapshot of the database at `path`.
pub(crate) fn open_snapshot(path: &Path, timeout: Duration) -> Result<Connection, InventoryError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Err(InventoryError::Missing(path.to_path_buf()));
    };
    // A symlinked database is read where SQLite would read it: at its target, with the
    // `-wal` beside the target.
    let real;
    let target = if meta.file_type().is_symlink() {
        real =
            std::fs::canonicalize(path).map_err(|_| InventoryError::Missing(path.to_path_buf()))?;
        real.as_path()
    } else {
        path
    };
    let mut img = read_image(target, timeout)?;
    if img.len() >= 100 {
        // A WAL-mode header would make SQLite look for a -wal beside the in-memory image.
        img[18] = 1;
        img[19] = 1;
    }
    let mut conn = Connection::open_with_flags(
        ":memory:",
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| io(path, e))?;
    if !img.is_empty() {
        let len = img.len();
        conn.deserialize_read_exact(rusqlite::MAIN_DB, &img[..], len, true)
            .map_err(|e| corrupt(path, e.to_string()))?;
    }
    conn.pragma_update(None, "query_only", true)
        .map_err(|e| io(path, e))?;
    // Touch the schema now so a damaged image is reported as corrupt here.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| corrupt(path, e.to_string()))?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn times(p: &Path) -> (i64, i64, i64, i64, u64) {
        let m = std::fs::metadata(p).unwrap();
        (m.atime(), m.atime_nsec(), m.mtime(), m.ctime(), m.size())
    }

    fn set_old_atime(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let t = [
            libc::timespec {
                tv_sec: 1_000_000,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
        ];
        // SAFETY: valid C string and timespec array.
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), 0) },
            0
        );
    }

    #[test]
    fn reads_a_rollback_db_without_touching_it() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("celesto.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE vms(id TEXT); INSERT INTO vms VALUES('a'),('b');")
            .unwrap();
        drop(c);
        set_old_atime(&p);
        let before = times(&p);
        let snap = open_snapshot(&p, BUSY_TIMEOUT).unwrap();
        let n: i64 = snap
            .query_row("SELECT count(*) FROM vms", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
        assert!(snap.execute("INSERT INTO vms VALUES('c')", []).is_err());
        assert_eq!(times(&p), before);
        let names: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["celesto.db"]);
    }

    /// A writer in another process (POSIX locks are per process: a writer in this test process
    /// would lose its locks whenever any descriptor of the file is closed here).
    struct Writer {
        child: std::process::Child,
        stdin: Option<std::process::ChildStdin>,
    }

    impl Writer {
        /// Run `setup`, then the statements of `hold` without committing, in python3's sqlite3.
        fn start(db: &Path, setup: &str, hold: &str) -> Writer {
            use std::io::BufRead;
            let script = "import sqlite3,sys\n\
                c=sqlite3.connect(sys.argv[1],isolation_level=None)\n\
                c.executescript(sys.argv[2])\n\
                [c.execute(s) for s in sys.argv[3].split(';') if s.strip()]\n\
                print('ready',flush=True)\n\
                sys.stdin.read()\n\
                c.execute('COMMIT')\n";
            let mut child = std::process::Command::new("python3")
                .arg("-c")
                .arg(script)
                .arg(db)
                .arg(setup)
                .arg(hold)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3");
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "ready");
            let stdin = child.stdin.take();
            Writer { child, stdin }
        }
        fn commit(mut self) {
            drop(self.stdin.take());
            assert!(self.child.wait().unwrap().success());
        }
    }

    impl Drop for Writer {
        fn drop(&mut self) {
            drop(self.stdin.take());
            let _ = self.child.wait();
        }
    }

    #[test]
    fn sees_committed_wal_frames_and_ignores_uncommitted_ones() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("smolvm.db");
        // Still open, nothing checkpointed: the committed row lives only in -wal.
        let w = Writer::start(
            &p,
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE vms(name TEXT PRIMARY KEY, data BLOB);
             INSERT INTO vms VALUES('one', x'7b7d');",
            "BEGIN; INSERT INTO vms VALUES('two', x'7b7d')",
        );
        let files = ["smolvm.db", "smolvm.db-wal", "smolvm.db-shm"];
        let shm_before = std::fs::read(t.path().join("smolvm.db-shm")).unwrap();
        for f in files {
            set_old_atime(&t.path().join(f));
        }
        let before: Vec<_> = files.iter().map(|f| times(&t.path().join(f))).collect();
        let snap = open_snapshot(&p, BUSY_TIMEOUT).unwrap();
        let names: Vec<String> = snap
            .prepare("SELECT name FROM vms ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(names, ["one"], "committed row seen, open transaction not");
        let after: Vec<_> = files.iter().map(|f| times(&t.path().join(f))).collect();
        assert_eq!(after, before);
        assert_eq!(
            std::fs::read(t.path().join("smolvm.db-shm")).unwrap(),
            shm_before
        );
        w.commit();
        let snap = open_snapshot(&p, BUSY_TIMEOUT).unwrap();
        let n: i64 = snap
            .query_row("SELECT count(*) FROM vms", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn waits_for_an_exclusive_writer_then_reports_locked() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("celesto.db");
        let w = Writer::start(
            &p,
            "CREATE TABLE vms(id TEXT);",
            "BEGIN EXCLUSIVE; INSERT INTO vms VALUES('x')",
        );
        let started = Instant::now();
        let e = open_snapshot(&p, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, InventoryError::Locked { .. }), "{e:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        w.commit();
        let snap = open_snapshot(&p, Duration::from_millis(300)).unwrap();
        let n: i64 = snap
            .query_row("SELECT count(*) FROM vms", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn garbage_is_corrupt_and_missing_is_missing() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("celesto.db");
        assert!(matches!(
            open_snapshot(&p, BUSY_TIMEOUT),
            Err(InventoryError::Missing(_))
        ));
        std::fs::write(&p, vec![7u8; 4096]).unwrap();
        assert!(matches!(
            open_snapshot(&p, BUSY_TIMEOUT),
            Err(InventoryError::Corrupt { .. })
        ));
        let mut bytes = b"SQLite format 3\0".to_vec();
        bytes.resize(4096, 0xff);
        std::fs::write(&p, bytes).unwrap();
        assert!(matches!(
            open_snapshot(&p, BUSY_TIMEOUT),
            Err(InventoryError::Corrupt { .. })
        ));
    }
}
