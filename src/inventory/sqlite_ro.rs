//! Opening another program's SQLite database without changing anything on disk.
//!
//! What a plain `mode=ro` connection would still do, measured with the bundled SQLite 3.50 on
//! Linux/ext4 (see `tests/inventory.rs`):
//!
//! * **WAL databases (smolvm):** the reader maps `-shm` read-write and stores a read mark in it
//!   (bytes and mtime of `-shm` change), and the first connection after a crash rebuilds the whole
//!   wal-index. With the unix-VFS URI parameter `readonly_shm=1` the `-shm` is mapped read-only:
//!   while another process holds the database open the reader uses the existing read marks and
//!   still sees every committed frame in `-wal`; when nobody holds it open SQLite reads `-wal`
//!   into private heap memory instead (the "unreliable shm" path). Either way nothing is written.
//!   So WAL databases are opened with `mode=ro&readonly_shm=1`.
//! * A WAL database whose `-wal` (or `-shm`) is missing (cleanly closed) makes a `mode=ro` reader
//!   **create** `-wal` and `-shm` and leave them behind (owned by the reader, or chowned to the
//!   database owner when the reader is root). Such a database is read from a private copy
//!   instead (all its data is in the main file, plus `-wal` when only `-shm` is missing).
//! * **As root**, SQLite `fchown`s every `-wal`/`-shm` it opens to the database owner, which bumps
//!   their ctime. Reading also updates atime (relatime: whenever atime <= mtime).
//!
//! To make reads write-free by construction, [`ReadGuard`] replaces three of the unix VFS's
//! system calls (`xSetSystemCall`, process-wide but only acting on the thread that holds the
//! guard; other SQLite users in the process see the original calls): `open` never creates
//! (`O_CREAT` stripped) and uses `O_NOATIME` where permitted, `fchown` is a no-op, `unlink` fails.
//! `immutable=1` is never used: it would ignore committed data still in `-wal`.

use std::cell::Cell;
use std::ffi::{c_char, c_int, CStr};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

use rusqlite::{ffi, Connection, OpenFlags};

use super::InventoryError;

/// How long a reader waits for a writer's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// A read-only connection to one inventory plus what it took to open it.
pub struct RoDb {
    pub conn: Connection,
    /// Set when the database was read from a private copy (kept alive while `conn` is open).
    _copy: Option<tempfile::TempDir>,
    /// Dropped last: SQLite opens `-wal`/`-shm` lazily and may touch files until `conn` closes.
    /// `None` for a private copy, where SQLite may create its `-wal`/`-shm` freely.
    _guard: Option<ReadGuard>,
}

/// Runs `f` inside one short read transaction on `path` (see [`open`]) and closes the
/// connection straight away. If the files beside a WAL database changed under the reader (its
/// last writer closed it between the check and the open), the read is retried.
pub fn read<T>(
    path: &Path,
    f: impl Fn(&Connection) -> Result<T, InventoryError>,
) -> Result<T, InventoryError> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut attempts = 0;
    loop {
        let before = fingerprint(&real);
        let result = (|| {
            let db = open(path)?;
            let tx = db
                .conn
                .unchecked_transaction()
                .map_err(|e| map_err(path, e))?;
            let value = f(&tx)?;
            // Nothing to commit; ending the transaction releases the shared lock at once.
            tx.rollback().map_err(|e| map_err(path, e))?;
            drop(db);
            Ok(value)
        })();
        attempts += 1;
        match result {
            Err(InventoryError::Io { .. }) if attempts < 3 && before != fingerprint(&real) => {
                continue
            }
            r => return r,
        }
    }
}

/// Opens `path` for reading without creating, writing, chowning or touching atime of any file
/// next to it. Fails with [`InventoryError::Missing`] when the file does not exist.
pub fn open(path: &Path) -> Result<RoDb, InventoryError> {
    let shown = path;
    // SQLite resolves a symlinked database to its target and keeps `-wal`/`-shm` beside that.
    let real = std::fs::canonicalize(path);
    let path = real.as_deref().unwrap_or(path);
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(InventoryError::Missing(shown.to_path_buf()))
        }
        Err(e) => return Err(io_err(shown, &e)),
    };
    if !meta.is_file() {
        return Err(InventoryError::Corrupt {
            path: shown.to_path_buf(),
            detail: format!("not a regular file ({:?})", meta.file_type()),
        });
    }
    let header = read_header(path).map_err(|e| with_path(e, shown))?;
    if header.wal && !(exists(&side(path, "-wal")) && exists(&side(path, "-shm"))) {
        // Opening it in place would create `-wal`/`-shm`: read a private copy instead.
        return copy_and_open(path).map_err(|e| with_path(e, shown));
    }
    let guard = ReadGuard::new();
    let conn = open_in_place(path).map_err(|e| with_path(e, shown))?;
    Ok(RoDb {
        conn,
        _copy: None,
        _guard: Some(guard),
    })
}

/// What the first 100 bytes say.
struct Header {
    wal: bool,
}

fn read_header(path: &Path) -> Result<Header, InventoryError> {
    let mut f = open_noatime(path).map_err(|e| io_err(path, &e))?;
    let mut buf = [0u8; 100];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path, &e)),
        }
    }
    if n == 0 {
        // SQLite treats an empty file as an empty database; there is nothing to read.
        return Err(InventoryError::Corrupt {
            path: path.to_path_buf(),
            detail: "empty file".into(),
        });
    }
    if n < 100 || &buf[..16] != b"SQLite format 3\0" {
        return Err(InventoryError::Corrupt {
            path: path.to_path_buf(),
            detail: "file is not a database (no SQLite header)".into(),
        });
    }
    Ok(Header {
        wal: buf[18] == 2 || buf[19] == 2,
    })
}

fn open_in_place(path: &Path) -> Result<Connection, InventoryError> {
    let uri = format!("file:{}?mode=ro&readonly_shm=1", percent_encode(path));
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| map_err(path, e))?;
    // Sorts and temporary tables stay in memory: the guard would refuse to create temp files.
    conn.pragma_update(None, "temp_store", "memory")
        .map_err(|e| map_err(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| map_err(path, e))?;
    Ok(conn)
}

/// Reads the database (and `-wal` when present) into a private 0700 temporary directory and opens
/// the copy. Used only when the files beside the database are incomplete, i.e. no process holds it
/// open; the copy is retried until the source is stable (same size, mtime, ctime, inode and the
/// same side files before and after copying).
fn copy_and_open(path: &Path) -> Result<RoDb, InventoryError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let before = fingerprint(path);
        let dir = tempfile::Builder::new()
            .prefix("smolsweep-inventory-")
            .tempdir()
            .map_err(|e| io_err(path, &e))?;
        let name = path.file_name().unwrap_or_else(|| "inventory.db".as_ref());
        let copy = dir.path().join(name);
        copy_noatime(path, &copy).map_err(|e| io_err(path, &e))?;
        let wal = side(path, "-wal");
        if exists(&wal) {
            let mut wal_copy = copy.clone().into_os_string();
            wal_copy.push("-wal");
            copy_noatime(&wal, Path::new(&wal_copy)).map_err(|e| io_err(path, &e))?;
        }
        if before == fingerprint(path) {
            // The copy is ours: a normal read-only open (it may create `-shm` in the temp dir).
            let uri = format!("file:{}?mode=ro", percent_encode(&copy));
            let conn = Connection::open_with_flags(
                uri,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| map_err(path, e))?;
            return Ok(RoDb {
                conn,
                _copy: Some(dir),
                _guard: None,
            });
        }
        if std::time::Instant::now() >= deadline {
            return Err(InventoryError::Locked {
                path: path.to_path_buf(),
                seconds: BUSY_TIMEOUT.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

type Fp = Vec<Option<(u64, u64, i64, i64, i64, i64)>>;

fn fingerprint(path: &Path) -> Fp {
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|s| {
            std::fs::symlink_metadata(side(path, s)).ok().map(|m| {
                (
                    m.ino(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                )
            })
        })
        .collect()
}

fn copy_noatime(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut src = open_noatime(from)?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NOATIME: c_int = libc::O_NOATIME;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NOATIME: c_int = 0;

fn set_errno(v: c_int) {
    // SAFETY: errno is a thread-local int owned by libc; writing it is how a failing system call
    // reports its error.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe {
        *libc::__errno_location() = v
    };
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    unsafe {
        *libc::__error() = v
    };
}

/// Opens for reading with `O_NOATIME` where permitted (owner or CAP_FOWNER), plainly otherwise.
pub fn open_noatime(path: &Path) -> std::io::Result<File> {
    if O_NOATIME == 0 {
        return File::open(path);
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NOATIME)
        .open(path)
    {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => File::open(path),
        r => r,
    }
}

pub fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// `file:` URI path: everything but unreserved characters and `/` percent-encoded.
pub fn percent_encode(path: &Path) -> String {
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reports errors under the path the caller gave, not its canonical form.
fn with_path(e: InventoryError, p: &Path) -> InventoryError {
    let p = p.to_path_buf();
    match e {
        InventoryError::Missing(_) => InventoryError::Missing(p),
        InventoryError::Locked { seconds, .. } => InventoryError::Locked { path: p, seconds },
        InventoryError::Corrupt { detail, .. } => InventoryError::Corrupt { path: p, detail },
        InventoryError::UnknownShape { detail, .. } => {
            InventoryError::UnknownShape { path: p, detail }
        }
        InventoryError::Io { detail, .. } => InventoryError::Io { path: p, detail },
    }
}

fn io_err(path: &Path, e: &std::io::Error) -> InventoryError {
    InventoryError::Io {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// Maps a SQLite error to the inventory error a scanner acts on.
pub fn map_err(path: &Path, e: rusqlite::Error) -> InventoryError {
    use rusqlite::ErrorCode as C;
    let path = path.to_path_buf();
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            C::DatabaseBusy | C::DatabaseLocked => InventoryError::Locked {
                path,
                seconds: BUSY_TIMEOUT.as_secs(),
            },
            C::NotADatabase | C::DatabaseCorrupt => InventoryError::Corrupt {
                path,
                detail: e.to_string(),
            },
            // READONLY_ROLLBACK / READONLY_RECOVERY / READONLY_CANTINIT: a crashed writer left a
            // hot journal or a wal-index that only a writer may repair.
            C::ReadOnly => InventoryError::Io {
                path,
                detail: format!("needs recovery by its owning program: {e}"),
            },
            C::Unknown
                if msg.as_deref().is_some_and(|m| {
                    m.starts_with("no such table") || m.starts_with("no such column")
                }) =>
            {
                InventoryError::UnknownShape {
                    path,
                    detail: e.to_string(),
                }
            }
            _ => InventoryError::Io {
                path,
                detail: e.to_string(),
            },
        },
        _ => InventoryError::Io {
            path,
            detail: e.to_string(),
        },
    }
}

/// Columns of `table`, or `None` when the table does not exist.
pub fn columns(
    conn: &Connection,
    path: &Path,
    table: &str,
) -> Result<Option<Vec<String>>, InventoryError> {
    let exists: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| map_err(path, e))?
        > 0;
    if !exists {
        return Ok(None);
    }
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .map_err(|e| map_err(path, e))?;
    let cols = stmt
        .query_map([table], |r| r.get::<_, String>(0))
        .map_err(|e| map_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| map_err(path, e))?;
    Ok(Some(cols))
}

/// Requires `table` with all of `needed`, else [`InventoryError::UnknownShape`].
pub fn require_columns(
    conn: &Connection,
    path: &Path,
    table: &str,
    needed: &[&str],
) -> Result<Vec<String>, InventoryError> {
    let Some(cols) = columns(conn, path, table)? else {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!("no table `{table}`"),
        });
    };
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|c| !cols.iter().any(|k| k.eq_ignore_ascii_case(c)))
        .collect();
    if !missing.is_empty() {
        return Err(InventoryError::UnknownShape {
            path: path.to_path_buf(),
            detail: format!("table `{table}` lacks column(s) {}", missing.join(", ")),
        });
    }
    Ok(cols)
}

// ---------------------------------------------------------------------------------------------
// Write-free system calls for the unix VFS while a `ReadGuard` is held on this thread.

thread_local! {
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

static ORIG_OPEN: AtomicUsize = AtomicUsize::new(0);
static ORIG_FCHOWN: AtomicUsize = AtomicUsize::new(0);
static ORIG_UNLINK: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

/// While alive, SQLite calls made on this thread cannot create, delete or chown files and open
/// them with `O_NOATIME` where permitted. Hold it across every SQLite call on an inventory
/// connection (open, queries, close).
/// Not `Send`: the guard acts on the thread that created it.
pub struct ReadGuard(std::marker::PhantomData<*const ()>);

impl ReadGuard {
    pub fn new() -> Self {
        INSTALL.call_once(install_syscalls);
        GUARDED.with(|g| g.set(g.get() + 1));
        ReadGuard(std::marker::PhantomData)
    }

    /// Whether the system-call replacements are in place (false only if this SQLite build's
    /// unix VFS lacks `xSetSystemCall`).
    pub fn active() -> bool {
        INSTALL.call_once(install_syscalls);
        ORIG_OPEN.load(Ordering::Acquire) != 0
    }
}

impl Default for ReadGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        GUARDED.with(|g| g.set(g.get().saturating_sub(1)));
    }
}

fn guarded() -> bool {
    GUARDED.try_with(|g| g.get() > 0).unwrap_or(false)
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int;
type FchownFn = unsafe extern "C" fn(c_int, libc::uid_t, libc::gid_t) -> c_int;
type UnlinkFn = unsafe extern "C" fn(*const c_char) -> c_int;

unsafe extern "C" fn ro_open(path: *const c_char, flags: c_int, mode: c_int) -> c_int {
    // SAFETY: ORIG_OPEN holds the unix VFS's original `open` (same signature), set before this
    // function was installed.
    let orig: OpenFn =
        unsafe { std::mem::transmute::<usize, OpenFn>(ORIG_OPEN.load(Ordering::Acquire)) };
    if !guarded() {
        return unsafe { orig(path, flags, mode) };
    }
    let flags = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC);
    if O_NOATIME != 0 {
        let fd = unsafe { orig(path, flags | O_NOATIME, mode) };
        if fd >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
            return fd;
        }
    }
    unsafe { orig(path, flags, mode) }
}

unsafe extern "C" fn ro_fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    if guarded() {
        return 0;
    }
    // SAFETY: as in `ro_open`.
    let orig: FchownFn =
        unsafe { std::mem::transmute::<usize, FchownFn>(ORIG_FCHOWN.load(Ordering::Acquire)) };
    unsafe { orig(fd, uid, gid) }
}

unsafe extern "C" fn ro_unlink(path: *const c_char) -> c_int {
    if guarded() {
        set_errno(libc::EACCES);
        return -1;
    }
    // SAFETY: as in `ro_open`.
    let orig: UnlinkFn =
        unsafe { std::mem::transmute::<usize, UnlinkFn>(ORIG_UNLINK.load(Ordering::Acquire)) };
    unsafe { orig(path) }
}

/// Replaces `open`, `fchown` and `unlink` of the unix VFS (shared by all its variants) with the
/// wrappers above. Runs once, before this module's first connection. `xSetSystemCall` is
/// SQLite's documented hook for this; it is not synchronised, so a connection being opened on
/// another thread at the very same moment may still use the original call, which is harmless.
fn install_syscalls() {
    // SAFETY: sqlite3_vfs_find initialises SQLite and returns a static VFS object (or null);
    // xGetSystemCall/xSetSystemCall take NUL-terminated names; the stored function pointers have
    // exactly the C signatures the unix VFS casts them to (`int(const char*,int,int)`,
    // `int(int,uid_t,gid_t)`, `int(const char*)`).
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(c"unix".as_ptr());
        if vfs.is_null() {
            return;
        }
        let (Some(get), Some(set)) = ((*vfs).xGetSystemCall, (*vfs).xSetSystemCall) else {
            return;
        };
        let calls: [(&CStr, &AtomicUsize, usize); 3] = [
            (c"open", &ORIG_OPEN, ro_open as OpenFn as usize),
            (c"fchown", &ORIG_FCHOWN, ro_fchown as FchownFn as usize),
            (c"unlink", &ORIG_UNLINK, ro_unlink as UnlinkFn as usize),
        ];
        // Only install when all three originals exist, so every wrapper has its original.
        let mut origs = [0usize; 3];
        for (i, (name, _, _)) in calls.iter().enumerate() {
            match get(vfs, name.as_ptr()) {
                Some(f) => origs[i] = f as usize,
                None => return,
            }
        }
        for (i, (name, slot, replacement)) in calls.iter().enumerate() {
            slot.store(origs[i], Ordering::Release);
            let f: unsafe extern "C" fn() =
                std::mem::transmute::<usize, unsafe extern "C" fn()>(*replacement);
            if set(vfs, name.as_ptr(), Some(f)) != ffi::SQLITE_OK {
                slot.store(0, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding_keeps_uri_syntax_out_of_paths() {
        assert_eq!(
            percent_encode(Path::new("/a b/c?d#e%f&mode=rw.db")),
            "/a%20b/c%3Fd%23e%25f%26mode%3Drw.db"
        );
    }

    #[test]
    fn syscall_replacements_are_installed() {
        assert!(ReadGuard::active());
    }

    #[test]
    fn guarded_open_never_creates() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let _g = ReadGuard::new();
        // SAFETY: a valid path and flags; the fd is closed right away if it was opened.
        let fd = unsafe { ro_open(c.as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o644) };
        assert!(fd < 0);
        assert!(!p.exists());
    }
}
