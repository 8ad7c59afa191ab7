//! Just enough of the qcow2 header to follow a backing chain, parsed here rather than by running
//! `qemu-img` (which takes locks and is slow).
//!
//! Layout (big-endian, QEMU `docs/interop/qcow2.txt`): magic `QFI\xfb` at 0, version (2 or 3) at
//! 4, `backing_file_offset` u64 at 8, `backing_file_size` u32 at 16, `cluster_bits` u32 at 20,
//! virtual `size` u64 at 24; the version 2 header is 72 bytes; version 3 adds `header_length` u32
//! at 100. Header extensions follow the header (type u32, length u32, data padded to 8 bytes,
//! ended by type 0); type `0xE2792ACA` names the backing file's format (`-F raw`).
//!
//! Reads are small and bounded: the fixed header, at most [`MAX_EXTENSION_BYTES`] of extensions
//! and at most [`MAX_BACKING_NAME`] bytes of name (QEMU's own limit). Files are opened with
//! `O_NOATIME` where permitted and `O_NONBLOCK` (a FIFO named as a backing file cannot hang the
//! scan), and only regular files and block devices are read.
//!
//! Outcomes of [`read_header`] / [`backing_file`]:
//! * `Ok(None)`: not a qcow2 image (no magic, shorter than 4 bytes, not a regular file or block
//!   device) — a raw base, for instance.
//! * `Err(InvalidData | UnexpectedEof)`: the qcow2 magic is there but the header is truncated or
//!   inconsistent (unknown version, cluster size out of QEMU's range, backing name offset outside
//!   the first cluster, name longer than 1023 bytes or past the end of the file, name not UTF-8).
//!   QEMU refuses to open such an image too.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `QFI\xfb`.
pub(crate) const MAGIC: [u8; 4] = *b"QFI\xfb";
/// Longest backing file name QEMU accepts (`bs->backing_file` is 1024 bytes with the NUL).
pub(crate) const MAX_BACKING_NAME: u32 = 1023;
/// Header extension: backing file format name.
pub(crate) const EXT_BACKING_FORMAT: u32 = 0xE279_2ACA;
/// At most this many bytes of header extensions are read.
pub(crate) const MAX_EXTENSION_BYTES: usize = 64 * 1024;

const V2_HEADER_LEN: usize = 72;
const V3_HEADER_LEN: usize = 104;
const MIN_CLUSTER_BITS: u32 = 9;
const MAX_CLUSTER_BITS: u32 = 21;

/// What the header says that matters for a backing chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// 2 (`compat=0.10`) or 3 (`compat=1.1`).
    pub version: u32,
    pub cluster_bits: u32,
    /// Virtual disk size in bytes.
    pub size: u64,
    /// Backing file name exactly as recorded (relative names are relative to the image's
    /// directory).
    pub backing_file: Option<String>,
    /// Backing file format from the header extension (`raw`, `qcow2`, ...), when recorded.
    pub backing_format: Option<String>,
}

/// The backing file name recorded in a qcow2 header, or `None` for a non-qcow2 file or an image
/// without a backing file.
#[cfg(test)]
pub fn backing_file(path: &Path) -> io::Result<Option<String>> {
    Ok(read_header(path)?.and_then(|h| h.backing_file))
}

/// Read the qcow2 header of `path` (following a symlink, as QEMU does). See the module
/// documentation for what counts as "not qcow2" and what is an error. A scan reads headers
/// through [`ChainMemo`] instead, once per file per scan.
pub(crate) fn read_header(path: &Path) -> io::Result<Option<Header>> {
    read_header_keyed(path).map(|(h, _)| h)
}

/// [`read_header`] with the identity of the file it opened (from its descriptor), when it is
/// a regular file: what [`ChainMemo`] keeps the header under.
fn read_header_keyed(path: &Path) -> io::Result<(Option<Header>, Option<FileKey>)> {
    let file = open_noatime(path)?;
    let meta = file.metadata()?;
    let ft = meta.file_type();
    if !(ft.is_file() || ft.is_block_device()) {
        return Ok((None, None));
    }
    #[cfg(test)]
    HEADER_READS.with(|n| n.set(n.get() + 1));
    let key = ft.is_file().then(|| FileKey::of(&meta));
    Ok((parse(&file)?, key))
}

#[cfg(test)]
thread_local! {
    /// Headers parsed on this thread (tests count the reads of one scan).
    pub(crate) static HEADER_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Device, inode, mtime and size of a regular file: a header read is reused only while the
/// file still has all four (a file swapped or rewritten between two questions is read again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FileKey {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    size: u64,
}

impl FileKey {
    fn of(m: &std::fs::Metadata) -> Self {
        FileKey {
            dev: m.dev(),
            ino: m.ino(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            size: m.size(),
        }
    }
}

/// What one scan has learnt about backing chains, so that every disk's chain is read once per
/// scan however many parts of the scan ask about it: each header read, under the identity of
/// the file it was read from, and each backing file's `stat` (one per path: a base shared by
/// hundreds of overlays is `stat`ed once). Lives as long as one scan, never longer.
#[derive(Default)]
pub(crate) struct ChainMemo {
    headers: HashMap<FileKey, Kept>,
    backing: HashMap<PathBuf, Option<FileKey>>,
}

impl ChainMemo {
    /// The header of `path`, whose `stat` (following a symlink, as the read does) gave `key`:
    /// kept from an earlier read of the same file, or read now.
    fn header(&mut self, path: &Path, key: Option<FileKey>) -> io::Result<Option<Header>> {
        let kept = key.and_then(|k| {
            self.headers
                .get(&k)
                .cloned()
                .or_else(|| remembered(k).inspect(|h| _ = self.headers.insert(k, h.clone())))
        });
        if let Some(kept) = kept {
            return kept.map_err(|(kind, msg)| io::Error::new(kind, msg));
        }
        let (result, read_key) = match read_header_keyed(path) {
            Ok((h, k)) => (Ok(h), k),
            Err(e) => (Err(e), key),
        };
        if let Some(k) = read_key {
            let kept = match &result {
                Ok(h) => Ok(h.clone()),
                Err(e) => Err((e.kind(), e.to_string())),
            };
            remember(k, &kept);
            self.headers.insert(k, kept);
        }
        result
    }

    /// The `stat` of a backing file (following symlinks), once per path per scan.
    fn backing_stat(&mut self, path: &Path) -> Option<FileKey> {
        if let Some(k) = self.backing.get(path) {
            return *k;
        }
        let k = std::fs::metadata(path).ok().map(|m| FileKey::of(&m));
        self.backing.insert(path.to_path_buf(), k);
        k
    }
}

/// A header read, or why it could not be.
type Kept = Result<Option<Header>, (io::ErrorKind, String)>;

/// Headers read by earlier scans of this process (the app's rescans), by the identity of the
/// file they were read from: a file with the same device, inode, mtime and size has the same
/// header, so a rescan `stat`s each disk and reads no header again. Bounded (emptied when
/// full), like the compaction estimates' cache.
static HEADERS: std::sync::Mutex<Option<HashMap<FileKey, Kept>>> = std::sync::Mutex::new(None);
/// Most headers kept across scans.
const HEADERS_MAX: usize = 8192;

fn remembered(k: FileKey) -> Option<Kept> {
    let cache = crate::basics::lock(&HEADERS);
    cache.as_ref()?.get(&k).cloned()
}

fn remember(k: FileKey, h: &Kept) {
    let mut cache = crate::basics::lock(&HEADERS);
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() >= HEADERS_MAX {
        map.clear();
    }
    map.insert(k, h.clone());
}

fn open_noatime(path: &Path) -> io::Result<File> {
    let open = |extra: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | extra)
            .open(path)
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // O_NOATIME is refused (EPERM) on files the caller does not own without CAP_FOWNER.
        match open(libc::O_NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            other => return other,
        }
    }
    open(0)
}

/// Read as many bytes as available at `offset`, up to `buf.len()`.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Big-endian field at `at`; 0 past the end (callers check lengths first: a header read from a
/// user's file must never be able to panic the scan).
fn be32(b: &[u8], at: usize) -> u32 {
    b.get(at..at.saturating_add(4))
        .and_then(|s| s.try_into().ok())
        .map(u32::from_be_bytes)
        .unwrap_or(0)
}

fn be64(b: &[u8], at: usize) -> u64 {
    b.get(at..at.saturating_add(8))
        .and_then(|s| s.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn parse(file: &File) -> io::Result<Option<Header>> {
    let mut h = [0u8; V3_HEADER_LEN];
    let got = read_at_most(file, &mut h, 0)?;
    if got < 4 || h[..4] != MAGIC {
        return Ok(None);
    }
    let version = if got >= 8 { be32(&h, 4) } else { 0 };
    let need = match version {
        2 => V2_HEADER_LEN,
        3 => V3_HEADER_LEN,
        _ if got < 8 => {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "qcow2 header truncated",
            ))
        }
        v => return Err(bad(format!("unsupported qcow2 version {v}"))),
    };
    if got < need {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("qcow2 header truncated ({got} of {need} bytes)"),
        ));
    }
    let backing_offset = be64(&h, 8);
    let backing_size = be32(&h, 16);
    let cluster_bits = be32(&h, 20);
    let size = be64(&h, 24);
    if !(MIN_CLUSTER_BITS..=MAX_CLUSTER_BITS).contains(&cluster_bits) {
        return Err(bad(format!(
            "qcow2 cluster_bits {cluster_bits} out of range"
        )));
    }
    let cluster_size = 1u64 << cluster_bits;
    let header_len = if version == 3 {
        let l = be32(&h, 100) as u64;
        if l < V3_HEADER_LEN as u64 || l > cluster_size {
            return Err(bad(format!("qcow2 header_length {l} invalid")));
        }
        l
    } else {
        V2_HEADER_LEN as u64
    };

    let backing_file = if backing_offset == 0 {
        None
    } else {
        if backing_offset > cluster_size {
            return Err(bad("qcow2 backing file offset outside the first cluster"));
        }
        if backing_size > MAX_BACKING_NAME {
            return Err(bad(format!(
                "qcow2 backing file name too long ({backing_size} bytes)"
            )));
        }
        let mut name = vec![0u8; backing_size as usize];
        let n = read_at_most(file, &mut name, backing_offset)?;
        if n < name.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "qcow2 backing file name past the end of the file",
            ));
        }
        let name = String::from_utf8(name).map_err(|_| bad("backing file name is not UTF-8"))?;
        (!name.is_empty()).then_some(name)
    };

    let backing_format = if backing_file.is_some() {
        backing_format(file, header_len, cluster_size)?
    } else {
        None
    };

    Ok(Some(Header {
        version,
        cluster_bits,
        size,
        backing_file,
        backing_format,
    }))
}

/// The backing-format header extension, if present among the extensions of the first cluster
/// (read up to [`MAX_EXTENSION_BYTES`]). A malformed extension area yields `None`: the format is
/// then probed instead, as QEMU does for an image without the extension.
fn backing_format(file: &File, header_len: u64, cluster_size: u64) -> io::Result<Option<String>> {
    let span = (cluster_size.saturating_sub(header_len) as usize).min(MAX_EXTENSION_BYTES);
    let mut area = vec![0u8; span];
    let n = read_at_most(file, &mut area, header_len)?;
    area.truncate(n);
    let mut at = 0usize;
    while at + 8 <= area.len() {
        let kind = be32(&area, at);
        let len = be32(&area, at + 4) as usize;
        if kind == 0 {
            break;
        }
        let data = at + 8;
        let Some(end) = data.checked_add(len).filter(|&e| e <= area.len()) else {
            break;
        };
        if kind == EXT_BACKING_FORMAT {
            let fmt = String::from_utf8_lossy(&area[data..end]);
            let fmt = fmt.trim_end_matches('\0');
            return Ok((!fmt.is_empty()).then(|| fmt.to_string()));
        }
        at = data + len.div_ceil(8) * 8;
    }
    Ok(None)
}

/// Why a backing chain stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChainEnd {
    /// The last image has no backing file (or the starting path is not qcow2).
    NoBacking,
    /// The last link is a base that is not qcow2 (raw, or recorded with a non-qcow2 format).
    NotQcow2,
    /// A backing file that does not exist (a dangling symlink counts); not in `links`.
    Missing(PathBuf),
    /// A backing file that is already in the chain (same device and inode); not repeated.
    Loop(PathBuf),
    /// `max_depth` links were followed and the last one names another.
    TooDeep,
    /// The last image (the starting one when `links` is empty) exists but its header could not
    /// be read or is garbled.
    Unreadable { path: PathBuf, error: String },
}

/// A backing chain and why it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// Backing files, nearest first (the starting image is not included). Relative names are
    /// joined to the directory of the image naming them; absolute names are kept as recorded.
    pub links: Vec<PathBuf>,
    pub end: ChainEnd,
}

/// The backing chain of an image: each backing file resolved (relative names against the
/// directory of the image that names them), up to `max_depth` links; stops at a missing file.
///
/// Also stops after a base that is not qcow2 (included), at a loop, or at an unreadable header
/// (included); see [`chain`] for the reason.
pub(crate) fn backing_chain(path: &Path, max_depth: usize) -> Vec<PathBuf> {
    chain(path, max_depth).links
}

/// [`backing_chain`] with the reason it stopped.
pub(crate) fn chain(path: &Path, max_depth: usize) -> Chain {
    chain_in(&mut ChainMemo::default(), path, max_depth).0
}

/// [`chain`], asking `memo` (one scan's) for headers and backing files it has already read,
/// with the (device, inode) of every link as it was `stat`ed.
pub(crate) fn chain_in(
    memo: &mut ChainMemo,
    path: &Path,
    max_depth: usize,
) -> (Chain, Vec<(u64, u64)>) {
    let mut links: Vec<PathBuf> = Vec::new();
    let mut visited: Vec<(u64, u64)> = Vec::new();
    // The starting image is `stat`ed at every call: its header is reused only while this
    // identity is the one it was read under.
    let mut key = std::fs::metadata(path).ok().map(|m| FileKey::of(&m));
    if let Some(k) = key {
        visited.push((k.dev, k.ino));
    }
    let mut current = path.to_path_buf();
    let end = loop {
        let header = match memo.header(&current, key) {
            Ok(Some(h)) => h,
            Ok(None) if links.is_empty() => break ChainEnd::NoBacking,
            Ok(None) => break ChainEnd::NotQcow2,
            Err(e) if links.is_empty() && e.kind() == io::ErrorKind::NotFound => {
                break ChainEnd::Missing(current)
            }
            Err(e) => {
                break ChainEnd::Unreadable {
                    path: current,
                    error: e.to_string(),
                }
            }
        };
        let Some(name) = header.backing_file else {
            break ChainEnd::NoBacking;
        };
        if links.len() >= max_depth {
            break ChainEnd::TooDeep;
        }
        let next = resolve(&current, &name);
        let Some(next_key) = memo.backing_stat(&next) else {
            break ChainEnd::Missing(next);
        };
        if visited.contains(&(next_key.dev, next_key.ino)) {
            break ChainEnd::Loop(next);
        }
        visited.push((next_key.dev, next_key.ino));
        links.push(next.clone());
        if header
            .backing_format
            .as_deref()
            .is_some_and(|f| f != "qcow2")
        {
            break ChainEnd::NotQcow2;
        }
        current = next;
        key = Some(next_key);
    };
    let ids = visited.split_off(visited.len() - links.len());
    (Chain { links, end }, ids)
}

/// Resolve a recorded backing name: absolute as-is, relative against the naming image's
/// directory (QEMU's `path_combine`).
pub(crate) fn resolve(image: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        image.parent().unwrap_or(Path::new("")).join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;
    use std::process::Command;

    /// Run the real `qemu-img` (Debian `qemu-utils`).
    fn qemu_img(args: &[&str]) {
        let out = Command::new("qemu-img")
            .args(args)
            .output()
            .expect("qemu-img must be installed (apt-get install qemu-utils)");
        assert!(
            out.status.success(),
            "qemu-img {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn raw(path: &Path, len: u64) {
        let f = File::create(path).unwrap();
        f.set_len(len).unwrap();
    }

    fn s(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    #[test]
    fn b1_overlay_backing_file_points_into_image_cache() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("images").join("ubuntu-v0.1.9-amd64-qemu");
        fs::create_dir_all(&cache).unwrap();
        let base = cache.join("rootfs.ext4");
        raw(&base, 64 << 20);
        let disks = d.path().join("data").join("disks");
        fs::create_dir_all(&disks).unwrap();
        let overlay = disks.join("real1.qcow2");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            s(&base),
            "-F",
            "raw",
            s(&overlay),
        ]);
        let h = read_header(&overlay).unwrap().unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.size, 64 << 20);
        assert_eq!(h.backing_file.as_deref(), Some(s(&base)));
        assert_eq!(h.backing_format.as_deref(), Some("raw"));
        assert_eq!(backing_file(&overlay).unwrap().as_deref(), Some(s(&base)));
        let c = chain(&overlay, 8);
        assert_eq!(c.links, vec![base.clone()]);
        assert_eq!(c.end, ChainEnd::NotQcow2);
        // What the image-cache check needs: the chain lands inside the cache directory.
        assert!(backing_chain(&overlay, 8)
            .iter()
            .any(|p| p.starts_with(&cache)));
    }

    #[test]
    fn a_scan_reads_each_header_once_and_again_after_a_swap_or_rewrite() {
        let d = tempfile::tempdir().unwrap();
        let (base, other) = (d.path().join("base.raw"), d.path().join("other.raw"));
        raw(&base, 1 << 20);
        raw(&other, 1 << 20);
        let overlay = d.path().join("disk.qcow2");
        let create = |backing: &Path, disk: &Path| {
            qemu_img(&[
                "create",
                "-q",
                "-f",
                "qcow2",
                "-b",
                s(backing),
                "-F",
                "raw",
                s(disk),
            ])
        };
        create(&base, &overlay);
        let reads = || HEADER_READS.with(|n| n.get());
        let start = reads();
        let fresh = chain(&overlay, 8);
        let mut memo = ChainMemo::default();
        let (c1, ids) = chain_in(&mut memo, &overlay, 8);
        let (c2, _) = chain_in(&mut memo, &overlay, 8);
        assert_eq!(reads() - start, 1, "the second question reuses the header");
        // A later scan (a new memo) of the unchanged file reads no header again either.
        let (c2b, _) = chain_in(&mut ChainMemo::default(), &overlay, 8);
        assert_eq!(
            (reads() - start, &c2b),
            (1, &c1),
            "a rescan reuses it by identity"
        );
        assert_eq!(c1, fresh, "the memo changes no answer");
        assert_eq!(c2, c1);
        let m = fs::metadata(&base).unwrap();
        assert_eq!(ids, vec![(m.dev(), m.ino())]);

        // Swapped for another file (a new inode) between two questions: read again.
        let swap = d.path().join("swap.qcow2");
        create(&other, &swap);
        fs::rename(&swap, &overlay).unwrap();
        let (c3, _) = chain_in(&mut memo, &overlay, 8);
        assert_eq!(reads() - start, 2);
        assert_eq!(c3.links, vec![other.clone()]);

        // Rewritten in place (same inode, another size and mtime): read again, and garbage
        // is reported as it is without the memo.
        fs::OpenOptions::new()
            .write(true)
            .open(&overlay)
            .unwrap()
            .write_all_at(b"QFI\xfb\0\0\0\x09", 0)
            .unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&overlay)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        let (c4, _) = chain_in(&mut memo, &overlay, 8);
        assert_eq!(reads() - start, 3);
        assert!(matches!(c4.end, ChainEnd::Unreadable { .. }), "{c4:?}");
        assert_eq!(c4, chain(&overlay, 8));
    }

    #[test]
    fn relative_backing_name_resolves_against_the_naming_image() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        fs::create_dir(&sub).unwrap();
        raw(&d.path().join("base.raw"), 1 << 20);
        let overlay = sub.join("o.qcow2");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "../base.raw",
            "-F",
            "raw",
            s(&overlay),
        ]);
        assert_eq!(
            backing_file(&overlay).unwrap().as_deref(),
            Some("../base.raw")
        );
        let c = chain(&overlay, 8);
        assert_eq!(c.links, vec![sub.join("../base.raw")]);
        assert_eq!(
            fs::canonicalize(&c.links[0]).unwrap(),
            fs::canonicalize(d.path().join("base.raw")).unwrap()
        );
        assert_eq!(c.end, ChainEnd::NotQcow2);
    }

    #[test]
    fn three_level_chain_is_followed_to_the_raw_base() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        raw(&p.join("base.raw"), 1 << 20);
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "base.raw",
            "-F",
            "raw",
            s(&p.join("l1.qcow2")),
        ]);
        fs::create_dir(p.join("mid")).unwrap();
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            s(&p.join("l1.qcow2")),
            "-F",
            "qcow2",
            s(&p.join("mid/l2.qcow2")),
        ]);
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "mid/l2.qcow2",
            "-F",
            "qcow2",
            s(&p.join("top.qcow2")),
        ]);
        let c = chain(&p.join("top.qcow2"), 8);
        assert_eq!(
            c.links,
            vec![
                p.join("mid/l2.qcow2"),
                p.join("l1.qcow2"),
                p.join("base.raw")
            ]
        );
        assert_eq!(c.end, ChainEnd::NotQcow2);
        // Depth limit.
        let c = chain(&p.join("top.qcow2"), 2);
        assert_eq!(c.links.len(), 2);
        assert_eq!(c.end, ChainEnd::TooDeep);
        assert!(backing_chain(&p.join("top.qcow2"), 0).is_empty());
    }

    #[test]
    fn chain_without_recorded_format_probes_the_base() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            s(&p.join("base.qcow2")),
            "1M",
        ]);
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "base.qcow2",
            "-F",
            "qcow2",
            s(&p.join("top.qcow2")),
        ]);
        // Rewrite the overlay so its header has no backing-format extension, as images made by
        // old QEMU versions do.
        let mut bytes = fs::read(p.join("top.qcow2")).unwrap();
        let hl = be32(&bytes, 100) as usize;
        let mut at = hl;
        while be32(&bytes, at) != 0 {
            if be32(&bytes, at) == EXT_BACKING_FORMAT {
                bytes[at..at + 4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
            }
            let len = be32(&bytes, at + 4) as usize;
            at += 8 + len.div_ceil(8) * 8;
        }
        fs::write(p.join("top.qcow2"), &bytes).unwrap();
        assert_eq!(
            read_header(&p.join("top.qcow2"))
                .unwrap()
                .unwrap()
                .backing_format,
            None
        );
        let c = chain(&p.join("top.qcow2"), 8);
        assert_eq!(c.links, vec![p.join("base.qcow2")]);
        assert_eq!(c.end, ChainEnd::NoBacking);
    }

    #[test]
    fn raw_file_is_not_qcow2() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("disk.ext4");
        raw(&f, 1 << 20);
        assert_eq!(read_header(&f).unwrap(), None);
        assert_eq!(backing_file(&f).unwrap(), None);
        let c = chain(&f, 8);
        assert!(c.links.is_empty());
        assert_eq!(c.end, ChainEnd::NoBacking);
        let tiny = d.path().join("tiny");
        fs::write(&tiny, b"QF").unwrap();
        assert_eq!(read_header(&tiny).unwrap(), None);
        // A directory or a FIFO is not read (a FIFO would block a plain open).
        assert_eq!(read_header(d.path()).unwrap(), None);
        let fifo = d.path().join("fifo");
        smolsweep_fixtures::mkfifo(&fifo).unwrap();
        assert_eq!(read_header(&fifo).unwrap(), None);
    }

    #[test]
    fn truncated_header_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("t.qcow2");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "/nonexistent/base.raw",
            "-F",
            "raw",
            "-u",
            s(&img),
            "1M",
        ]);
        let full = fs::read(&img).unwrap();
        for len in [6usize, 50, 100] {
            let cut = d.path().join(format!("cut{len}.qcow2"));
            fs::write(&cut, &full[..len]).unwrap();
            let e = read_header(&cut).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "len {len}");
            assert!(matches!(chain(&cut, 8).end, ChainEnd::Unreadable { .. }));
        }
        // Cut inside the backing name.
        let off = be64(&full, 8) as usize;
        let cut = d.path().join("cutname.qcow2");
        fs::write(&cut, &full[..off + 3]).unwrap();
        assert_eq!(
            read_header(&cut).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn garbled_header_is_an_error_and_reads_stay_bounded() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("g.qcow2");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "/x/base.raw",
            "-F",
            "raw",
            "-u",
            s(&img),
            "1M",
        ]);
        let good = fs::read(&img).unwrap();
        let garble = |at: usize, bytes: &[u8]| {
            let mut b = good.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            let p = d.path().join(format!("g{at}.qcow2"));
            fs::write(&p, &b).unwrap();
            read_header(&p)
        };
        // Name length over QEMU's 1023 limit: refused without reading it.
        let e = garble(16, &4096u32.to_be_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // Name offset far beyond the first cluster.
        let e = garble(8, &(1u64 << 40).to_be_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // Unknown version.
        let e = garble(4, &7u32.to_be_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // Silly cluster size.
        let e = garble(20, &40u32.to_be_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // The untouched image still parses.
        assert_eq!(
            read_header(&img).unwrap().unwrap().backing_file.as_deref(),
            Some("/x/base.raw")
        );
    }

    #[test]
    fn v2_image_compat_0_10() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("base.raw");
        raw(&base, 1 << 20);
        let img = d.path().join("v2.qcow2");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-o",
            "compat=0.10",
            "-b",
            s(&base),
            "-F",
            "raw",
            s(&img),
        ]);
        let h = read_header(&img).unwrap().unwrap();
        assert_eq!(h.version, 2);
        assert_eq!(h.backing_file.as_deref(), Some(s(&base)));
        assert_eq!(h.backing_format.as_deref(), Some("raw"));
        assert_eq!(backing_chain(&img, 8), vec![base]);
    }

    #[test]
    fn image_without_backing_file() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("plain.qcow2");
        qemu_img(&["create", "-q", "-f", "qcow2", s(&img), "4M"]);
        let h = read_header(&img).unwrap().unwrap();
        assert_eq!((h.version, h.size, h.backing_file), (3, 4 << 20, None));
        assert_eq!(
            chain(&img, 8),
            Chain {
                links: vec![],
                end: ChainEnd::NoBacking
            }
        );
    }

    #[test]
    fn missing_backing_file_stops_the_chain() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("o.qcow2");
        let gone = d.path().join("gone.raw");
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            s(&gone),
            "-F",
            "raw",
            "-u",
            s(&img),
            "1M",
        ]);
        let c = chain(&img, 8);
        assert!(c.links.is_empty());
        assert_eq!(c.end, ChainEnd::Missing(gone.clone()));
        // A dangling symlink is missing too.
        std::os::unix::fs::symlink(d.path().join("nowhere"), &gone).unwrap();
        assert_eq!(chain(&img, 8).end, ChainEnd::Missing(gone));
    }

    #[test]
    fn backing_loop_stops() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "b.qcow2",
            "-F",
            "qcow2",
            "-u",
            s(&p.join("a.qcow2")),
            "1M",
        ]);
        qemu_img(&[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "a.qcow2",
            "-F",
            "qcow2",
            "-u",
            s(&p.join("b.qcow2")),
            "1M",
        ]);
        let c = chain(&p.join("a.qcow2"), 100);
        assert_eq!(c.links, vec![p.join("b.qcow2")]);
        assert_eq!(c.end, ChainEnd::Loop(p.join("a.qcow2")));
    }

    #[test]
    fn reading_a_header_changes_no_atime() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("o.qcow2");
        qemu_img(&["create", "-q", "-f", "qcow2", s(&img), "1M"]);
        // atime older than mtime: relatime would update it on the next read.
        let old = rustix::fs::Timespec {
            tv_sec: 1_000_000,
            tv_nsec: 0,
        };
        let now = fs::metadata(&img).unwrap().mtime();
        rustix::fs::utimensat(
            rustix::fs::CWD,
            &img,
            &rustix::fs::Timestamps {
                last_access: old,
                last_modification: rustix::fs::Timespec {
                    tv_sec: now,
                    tv_nsec: 0,
                },
            },
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
        read_header(&img).unwrap().unwrap();
        assert_eq!(fs::metadata(&img).unwrap().atime(), 1_000_000);
    }
}
