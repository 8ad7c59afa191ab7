//! How much of a disk image is allocated on the host but free in the guest's ext4 file system:
//! what compacting it (releasing the blocks the guest calls free) could give back. Read-only.
//!
//! * A raw ext4 image: the free blocks of its file system ([`ext4::free_map`]) that the host
//!   file has data for (`SEEK_DATA`/`SEEK_HOLE`), rounded inward to the host file system's
//!   block size (`st_blksize`), since only whole host blocks can be punched out.
//! * A qcow2 image (with or without a backing chain): the clusters this file maps
//!   ([`qmap::Chain::mapped_clusters`]) whose whole guest range is free in the file system read
//!   through the chain; a backing file's clusters are never counted (they are not this disk's).
//!
//! Both are capped by the file's allocated bytes (`st_blocks` × 512).
//!
//! The bound: at most [`MAX_READ`] bytes read per disk (the reads are listed in [`ext4`] and
//! [`qmap`]: about 32 KiB per GiB of file system for the bitmaps, and for qcow2 64 KiB of L2
//! table per 512 MiB of virtual disk with 64 KiB clusters), plus one `lseek` pair per data
//! extent of a raw image (at most [`MAX_EXTENTS`]). An estimate is reused while the disk and
//! every file of its chain keep their device, inode, size and mtime ([`estimate_cached`]).

pub(crate) mod child;
pub(crate) mod ext4;
mod plan;
pub(crate) mod qmap;
mod survey;
pub(crate) mod tools;

pub use plan::compact_plan;
pub use survey::apply_keeps_at;
pub(crate) use survey::{other_names, survey};

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;

/// Most bytes one estimate reads.
pub(crate) const MAX_READ: u64 = 32 << 20;
/// Most data extents of a raw image one estimate walks.
pub(crate) const MAX_EXTENTS: usize = 1 << 20;

/// Why an estimate cannot be given exactly: one sentence, completing "cannot tell: …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CannotTell(pub String);

/// Guest bytes, readable at an offset.
pub(crate) trait Guest {
    /// Fill `buf` from guest offset `off` (zeros past the end of the disk).
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> Result<(), CannotTell>;
}

/// Bytes one estimate may still read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub used: u64,
}

impl Budget {
    fn new() -> Self {
        Budget { used: 0 }
    }

    pub(crate) fn take(&mut self, n: u64) -> Result<(), CannotTell> {
        self.used = self.used.saturating_add(n);
        if self.used > MAX_READ {
            return Err(CannotTell(format!(
                "reading its file system would take more than {} MiB",
                MAX_READ >> 20
            )));
        }
        Ok(())
    }
}

/// Read up to `buf.len()` bytes of `file` at `off`, counting them against `budget`; how many
/// were there (the rest of `buf` is left as it was).
pub(crate) fn read_full(
    file: &File,
    buf: &mut [u8],
    off: u64,
    budget: &mut Budget,
) -> Result<usize, CannotTell> {
    budget.take(buf.len() as u64)?;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CannotTell(format!("it could not be read: {e}"))),
        }
    }
    Ok(got)
}

/// Open a disk image for reading (following a symlink, as QEMU does): never blocks on a pipe
/// or device, leaves the atime alone where allowed, and only a regular file is accepted.
pub(crate) fn open_disk(path: &Path) -> std::io::Result<File> {
    let open = |extra: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | extra)
            .open(path)
    };
    let file = match open(crate::fsread::NOATIME.bits() as i32) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(0)?,
        other => other?,
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// A raw image read as it is.
struct Raw<'a> {
    file: &'a File,
    budget: Budget,
}

impl Guest for Raw<'_> {
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> Result<(), CannotTell> {
        buf.fill(0);
        read_full(self.file, buf, off, &mut self.budget).map(|_| ())
    }
}

/// The image formats estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Raw,
    Qcow2,
}

impl Format {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Qcow2 => "qcow2",
        }
    }
}

/// One disk's estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub format: Format,
    /// `st_blocks` × 512 of the disk file.
    pub allocated_bytes: u64,
    /// Of those, bytes free in the guest's file system that compacting would release.
    pub compactable_bytes: u64,
    /// Free bytes of the guest's file system (from its bitmaps).
    pub guest_free_bytes: u64,
    /// Bytes the estimate read.
    pub read_bytes: u64,
}

/// The estimate of one disk image, read now. `Err` says why it cannot tell; the format is
/// known whenever the file could be opened.
pub(crate) fn estimate(path: &Path) -> Result<Estimate, (Option<Format>, CannotTell)> {
    let file =
        open_disk(path).map_err(|e| (None, CannotTell(format!("it could not be opened: {e}"))))?;
    let meta = file
        .metadata()
        .map_err(|e| (None, CannotTell(format!("it could not be read: {e}"))))?;
    let allocated = meta.blocks() * 512;
    if qmap::is_qcow2(&file) {
        let fail = |c| (Some(Format::Qcow2), c);
        let (free, cs, guest_free, read) = qcow2_free(path, file).map_err(fail)?;
        let bytes = free.len() as u64 * cs;
        return Ok(Estimate {
            format: Format::Qcow2,
            allocated_bytes: allocated,
            compactable_bytes: bytes.min(allocated),
            guest_free_bytes: guest_free,
            read_bytes: read,
        });
    }
    let fail = |c| (Some(Format::Raw), c);
    let mut raw = Raw {
        file: &file,
        budget: Budget::new(),
    };
    let map = ext4::free_map(&mut raw).map_err(fail)?;
    let fs_end = map.blocks * map.block_size;
    let grain = meta.blksize().max(1);
    let mut bytes = 0u64;
    for (start, end) in data_extents(&file, fs_end.min(meta.len())).map_err(fail)? {
        bytes += free_in(&map, start, end, grain);
    }
    Ok(Estimate {
        format: Format::Raw,
        allocated_bytes: allocated,
        compactable_bytes: bytes.min(allocated),
        guest_free_bytes: map.free_blocks * map.block_size,
        read_bytes: raw.budget.used,
    })
}

/// The guest offsets of the clusters a qcow2 image maps itself whose whole range its guest's
/// file system calls free, with the cluster size, the guest's free bytes and the bytes read.
fn qcow2_free(path: &Path, file: File) -> Result<(Vec<u64>, u64, u64, u64), CannotTell> {
    let mut chain = qmap::Chain::open(path, file, Budget::new())?;
    let map = ext4::free_map(&mut chain)?;
    let cs = chain.cluster_size();
    let bs = map.block_size;
    let free = chain
        .mapped_clusters()?
        .into_iter()
        .filter(|c| map.all_free(c / bs, (c + cs).div_ceil(bs)))
        .collect();
    Ok((free, cs, map.free_blocks * bs, chain.budget.used))
}

/// The guest byte ranges of a qcow2 image that compacting discards: runs of whole clusters it
/// maps itself that its guest's file system calls free (what [`estimate`] counts), read now.
pub(crate) fn qcow2_discard_ranges(path: &Path) -> Result<Vec<(u64, u64)>, CannotTell> {
    let file = open_disk(path).map_err(|e| CannotTell(format!("it could not be opened: {e}")))?;
    let (free, cs, _, _) = qcow2_free(path, file)?;
    let mut out: Vec<(u64, u64)> = Vec::new();
    for c in free {
        match out.last_mut() {
            Some((start, len)) if *start + *len == c => *len += cs,
            _ => out.push((c, cs)),
        }
    }
    Ok(out)
}

/// Device and inode of every file of the qcow2 image at `path` and of its backing chain, as
/// the estimate reads them (the top first).
pub(crate) fn qcow2_files(path: &Path) -> Result<Vec<(u64, u64)>, CannotTell> {
    let file = open_disk(path).map_err(|e| CannotTell(format!("it could not be opened: {e}")))?;
    Ok(qmap::Chain::open(path, file, Budget::new())?.files())
}

/// The byte ranges of `file` below `end` that hold data (`SEEK_DATA`/`SEEK_HOLE`).
fn data_extents(file: &File, end: u64) -> Result<Vec<(u64, u64)>, CannotTell> {
    use rustix::fs::{seek, SeekFrom};
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < end {
        let start = match seek(file, SeekFrom::Data(at)) {
            Ok(s) => s,
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(CannotTell(format!("its extents could not be read: {e}"))),
        };
        if start >= end {
            break;
        }
        let stop = seek(file, SeekFrom::Hole(start))
            .map_err(|e| CannotTell(format!("its extents could not be read: {e}")))?
            .min(end);
        out.push((start, stop));
        if out.len() > MAX_EXTENTS {
            return Err(CannotTell(format!(
                "it has more than {MAX_EXTENTS} data extents"
            )));
        }
        at = stop;
    }
    Ok(out)
}

/// Bytes of `[start, end)` in runs of free blocks, each run (ended at a block group's end, as
/// e2fsck discards them) rounded inward to `grain`. The runs are found a bitmap word at a time.
fn free_in(map: &ext4::FreeMap, start: u64, end: u64, grain: u64) -> u64 {
    let bs = map.block_size;
    let mut total = 0;
    let last = end.div_ceil(bs);
    let mut b = map.next(start / bs, last, true);
    while b < last {
        let run = b;
        b = map.next(b, map.group_end(b).min(last), false);
        let lo = (run * bs).max(start).next_multiple_of(grain);
        let hi = (b * bs).min(end) / grain * grain;
        total += hi.saturating_sub(lo);
        b = map.next(b, last, true);
    }
    total
}

/// Identity of a file: device, inode, size, mtime and ctime (ns). The ctime too: a compaction
/// gives a disk back the timestamps it had (its guest's files are unchanged), and only the
/// ctime, which nothing can set back, tells its estimate is old.
type Ident = (u64, u64, u64, i128, i128);

fn ident(path: &Path) -> Option<Ident> {
    let m = std::fs::metadata(path).ok()?;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    ))
}

type Outcome = Result<Estimate, (Option<Format>, CannotTell)>;

/// Estimates kept across scans of this process, under the identities of the disk and of every
/// file of its backing chain.
static CACHE: Mutex<Option<HashMap<Vec<Ident>, Outcome>>> = Mutex::new(None);
/// Most estimates kept (the cache is emptied when full).
const CACHE_MAX: usize = 4096;

/// [`estimate`], reused while the disk and its backing chain keep their identities.
pub(crate) fn estimate_cached(path: &Path) -> Outcome {
    let Some(top) = ident(path) else {
        return estimate(path);
    };
    let mut key = vec![top];
    for link in crate::qcow2::backing_chain(path, qmap::MAX_DEPTH) {
        key.push(ident(&link).unwrap_or_default());
    }
    let mut cache = crate::basics::lock(&CACHE);
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some(hit) = map.get(&key) {
        return hit.clone();
    }
    drop(cache);
    let out = estimate(path);
    let mut cache = crate::basics::lock(&CACHE);
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() >= CACHE_MAX {
        map.clear();
    }
    map.insert(key, out.clone());
    out
}

#[cfg(test)]
mod tests;
