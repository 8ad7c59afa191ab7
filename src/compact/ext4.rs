//! Which blocks of an ext4 file system are free, read from its superblock, group descriptors
//! and block bitmaps only (the layout of the kernel's `Documentation/filesystems/ext4/`,
//! e2fsprogs `lib/ext2fs/ext2_fs.h`), through any [`Guest`] (a raw image, or a qcow2 chain).
//!
//! Read: 1 KiB of superblock, the group descriptor table (32 or 64 bytes per group) and one
//! bitmap block per group whose bitmap is initialised (`BLOCK_UNINIT` groups are computed, as
//! the kernel's `ext4_init_block_bitmap` does): with 4 KiB blocks, 4 KiB per 128 MiB of file
//! system (32 KiB per GiB). The reader's budget bounds it ([`super::MAX_READ`]).
//!
//! Anything whose free blocks cannot be read exactly this way is a [`CannotTell`]: not ext4,
//! an incompatible or read-only-compatible feature not known here (compression, `meta_bg`,
//! `bigalloc`, an external journal device, ...), a journal that needs recovery, a file system
//! not cleanly unmounted or with errors recorded. Metadata checksums are not verified (there is
//! no CRC32C here); instead the free blocks counted from the bitmaps must equal the count the
//! superblock records (a cleanly unmounted file system keeps the two equal), else it cannot
//! tell.

use super::{CannotTell, Guest};

const SB_OFFSET: u64 = 1024;
const SB_LEN: usize = 1024;
const MAGIC: u16 = 0xEF53;

const STATE_VALID: u16 = 0x1;
const STATE_ERROR: u16 = 0x2;

const INCOMPAT_COMPRESSION: u32 = 0x1;
const INCOMPAT_RECOVER: u32 = 0x4;
const INCOMPAT_JOURNAL_DEV: u32 = 0x8;
const INCOMPAT_META_BG: u32 = 0x10;
const INCOMPAT_64BIT: u32 = 0x80;
/// filetype, extents, 64bit, mmp, flex_bg, ea_inode, dirdata, csum_seed, largedir,
/// inline_data, encrypt, casefold: none changes where descriptors or bitmaps are.
const INCOMPAT_KNOWN: u32 = 0x2
    | 0x40
    | 0x80
    | 0x100
    | 0x200
    | 0x400
    | 0x1000
    | 0x2000
    | 0x4000
    | 0x8000
    | 0x10000
    | 0x20000;
const RO_COMPAT_SPARSE_SUPER: u32 = 0x1;
const RO_COMPAT_BIGALLOC: u32 = 0x200;
/// sparse_super, large_file, btree_dir, huge_file, gdt_csum, dir_nlink, extra_isize, quota,
/// metadata_csum, readonly, project, verity, orphan_present.
const RO_COMPAT_KNOWN: u32 =
    0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x20 | 0x40 | 0x100 | 0x400 | 0x1000 | 0x2000 | 0x8000 | 0x10000;
const COMPAT_SPARSE_SUPER2: u32 = 0x200;

const BG_BLOCK_UNINIT: u16 = 0x2;

/// The free blocks of one ext4 file system.
#[derive(Debug, Clone)]
pub(crate) struct FreeMap {
    pub block_size: u64,
    pub blocks: u64,
    /// One bit per block, set when the block is free.
    free: Vec<u64>,
    /// Free blocks counted from the bitmaps.
    pub free_blocks: u64,
    /// Free blocks as the superblock records them (`dumpe2fs -h` "Free blocks").
    pub sb_free_blocks: u64,
    first_data_block: u64,
    blocks_per_group: u64,
}

/// The bits of word `w` (blocks `64·w …`) that lie in `[from, to)`.
fn mask(w: u64, from: u64, to: u64) -> u64 {
    let lo = from.saturating_sub(w * 64).min(64);
    let hi = to.saturating_sub(w * 64).min(64);
    let upto = |n: u64| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    upto(hi) & !upto(lo)
}

impl FreeMap {
    /// Free blocks in `[from, to)` (counted a word at a time).
    pub fn count_free(&self, from: u64, to: u64) -> u64 {
        let to = to.min(self.blocks);
        if from >= to {
            return 0;
        }
        (from / 64..to.div_ceil(64))
            .map(|w| u64::from((self.free[w as usize] & mask(w, from, to)).count_ones()))
            .sum()
    }

    /// Whether every block of `[first, end)` is free (false for an empty or out-of-range one).
    pub fn all_free(&self, first: u64, end: u64) -> bool {
        first < end && end <= self.blocks && self.count_free(first, end) == end - first
    }

    /// The first block of `[from, to)` that is free (`free`) or used (`!free`), else `to`
    /// (a word at a time).
    pub fn next(&self, from: u64, to: u64, free: bool) -> u64 {
        let to = to.min(self.blocks);
        let mut w = from / 64;
        while w * 64 < to {
            let bits = if free {
                self.free[w as usize]
            } else {
                !self.free[w as usize]
            } & mask(w, from, to);
            if bits != 0 {
                return w * 64 + u64::from(bits.trailing_zeros());
            }
            w += 1;
        }
        to
    }

    /// The first block of the block group after the one holding `block` (e2fsck discards each
    /// group's free runs separately, so a run never crosses a group boundary).
    pub fn group_end(&self, block: u64) -> u64 {
        let fdb = self.first_data_block;
        if block < fdb {
            return fdb;
        }
        fdb + ((block - fdb) / self.blocks_per_group + 1) * self.blocks_per_group
    }

    /// Mark `[from, to)` free or used, a word at a time.
    fn set(&mut self, from: u64, to: u64, free: bool) {
        let to = to.min(self.blocks);
        if from >= to {
            return;
        }
        for w in from / 64..to.div_ceil(64) {
            let m = mask(w, from, to);
            let word = &mut self.free[w as usize];
            *word = if free { *word | m } else { *word & !m };
        }
    }

    /// Take in one initialised group's block bitmap: blocks `start…start+len` whose bit is
    /// clear are free. 64 bits at a time; returns how many are free.
    fn take_bitmap(&mut self, bitmap: &[u8], start: u64, len: u64) -> u64 {
        let mut n = 0;
        let mut bit = 0;
        while bit < len {
            let take = (len - bit).min(64);
            let at = (bit / 8) as usize;
            let mut w = [0u8; 8];
            let avail = (take.div_ceil(8) as usize).min(bitmap.len().saturating_sub(at));
            w[..avail].copy_from_slice(&bitmap[at..at + avail]);
            let mut v = !u64::from_le_bytes(w);
            if take < 64 {
                v &= (1u64 << take) - 1;
            }
            n += u64::from(v.count_ones());
            let (i, sh) = (((start + bit) / 64) as usize, (start + bit) % 64);
            if v != 0 {
                self.free[i] |= v << sh;
                if sh > 0 {
                    if let Some(next) = self.free.get_mut(i + 1) {
                        *next |= v >> (64 - sh);
                    }
                }
            }
            bit += 64;
        }
        n
    }
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// What the superblock says that the free map needs.
#[derive(Debug)]
struct Super {
    block_size: u64,
    blocks: u64,
    first_data_block: u64,
    blocks_per_group: u64,
    inodes_per_group: u64,
    inode_size: u64,
    desc_size: u64,
    reserved_gdt: u64,
    sparse_super: bool,
    /// `Some` with `sparse_super2`: the only groups besides 0 holding a backup.
    backup_bgs: Option<[u64; 2]>,
    sb_free_blocks: u64,
}

fn cannot(why: &str) -> CannotTell {
    CannotTell(why.to_string())
}

/// Parse and vet the superblock.
fn read_super(g: &mut dyn Guest) -> Result<Super, CannotTell> {
    let mut b = vec![0u8; SB_LEN];
    g.read_at(&mut b, SB_OFFSET)?;
    if le16(&b, 0x38) != MAGIC {
        return Err(cannot("not an ext4 file system"));
    }
    let (compat, incompat, ro) = (le32(&b, 0x5C), le32(&b, 0x60), le32(&b, 0x64));
    if incompat & INCOMPAT_RECOVER != 0 {
        return Err(cannot(
            "its journal needs recovery (the guest did not shut down cleanly)",
        ));
    }
    let state = le16(&b, 0x3A);
    if state & STATE_ERROR != 0 || le32(&b, 0x194) != 0 {
        return Err(cannot("its file system has errors recorded"));
    }
    if state & STATE_VALID == 0 {
        return Err(cannot("its file system was not cleanly unmounted"));
    }
    for (bit, what) in [
        (INCOMPAT_COMPRESSION, "compression"),
        (INCOMPAT_JOURNAL_DEV, "an external journal device"),
        (INCOMPAT_META_BG, "meta_bg"),
    ] {
        if incompat & bit != 0 {
            return Err(CannotTell(format!("its file system uses {what}")));
        }
    }
    if incompat & !INCOMPAT_KNOWN != 0 || ro & !RO_COMPAT_KNOWN != 0 {
        let what = if ro & RO_COMPAT_BIGALLOC != 0 {
            "bigalloc".to_string()
        } else {
            format!(
                "features not known here (incompat {:#x}, ro_compat {:#x})",
                incompat & !INCOMPAT_KNOWN,
                ro & !RO_COMPAT_KNOWN
            )
        };
        return Err(CannotTell(format!("its file system uses {what}")));
    }
    let log = le32(&b, 0x18);
    if log > 6 {
        return Err(cannot("its superblock gives an impossible block size"));
    }
    let block_size = 1024u64 << log;
    let is64 = incompat & INCOMPAT_64BIT != 0;
    let hi = |at: usize| {
        if is64 {
            u64::from(le32(&b, at)) << 32
        } else {
            0
        }
    };
    let desc_size = if is64 { u64::from(le16(&b, 0xFE)) } else { 32 };
    let s = Super {
        block_size,
        blocks: u64::from(le32(&b, 0x4)) | hi(0x150),
        first_data_block: u64::from(le32(&b, 0x14)),
        blocks_per_group: u64::from(le32(&b, 0x20)),
        inodes_per_group: u64::from(le32(&b, 0x28)),
        inode_size: if le32(&b, 0x4C) == 0 {
            128
        } else {
            u64::from(le16(&b, 0x58))
        },
        desc_size,
        reserved_gdt: u64::from(le16(&b, 0xCE)),
        sparse_super: ro & RO_COMPAT_SPARSE_SUPER != 0,
        backup_bgs: (compat & COMPAT_SPARSE_SUPER2 != 0)
            .then(|| [u64::from(le32(&b, 0x24C)), u64::from(le32(&b, 0x250))]),
        sb_free_blocks: u64::from(le32(&b, 0x0C)) | hi(0x158),
    };
    let sane = s.blocks_per_group >= 8
        && s.blocks_per_group <= block_size * 8
        && s.blocks_per_group.is_multiple_of(8)
        && s.blocks > s.first_data_block
        && (32..=1024).contains(&s.desc_size)
        && s.desc_size.is_power_of_two()
        && s.inode_size >= 128;
    if !sane {
        return Err(cannot("its superblock is inconsistent"));
    }
    Ok(s)
}

fn is_power_of(mut n: u64, base: u64) -> bool {
    while n > 1 && n.is_multiple_of(base) {
        n /= base;
    }
    n == 1
}

impl Super {
    fn groups(&self) -> u64 {
        (self.blocks - self.first_data_block).div_ceil(self.blocks_per_group)
    }

    fn gdt_blocks(&self) -> u64 {
        (self.groups() * self.desc_size).div_ceil(self.block_size)
    }

    /// Whether group `g` holds a superblock backup (and the descriptor table after it).
    fn has_super(&self, g: u64) -> bool {
        if g == 0 {
            return true;
        }
        if let Some(bgs) = self.backup_bgs {
            return bgs.contains(&g);
        }
        !self.sparse_super || g == 1 || is_power_of(g, 3) || is_power_of(g, 5) || is_power_of(g, 7)
    }

    fn group_start(&self, g: u64) -> u64 {
        self.first_data_block + g * self.blocks_per_group
    }

    fn group_len(&self, g: u64) -> u64 {
        self.blocks_per_group.min(self.blocks - self.group_start(g))
    }
}

/// One group descriptor's locations.
struct Desc {
    block_bitmap: u64,
    inode_bitmap: u64,
    inode_table: u64,
    flags: u16,
}

fn read_descs(g: &mut dyn Guest, s: &Super) -> Result<Vec<Desc>, CannotTell> {
    let mut table = vec![0u8; (s.gdt_blocks() * s.block_size) as usize];
    g.read_at(&mut table, (s.first_data_block + 1) * s.block_size)?;
    let is64 = s.desc_size >= 64;
    Ok((0..s.groups())
        .map(|i| {
            let d = &table[(i * s.desc_size) as usize..][..s.desc_size as usize];
            let at = |lo: usize, hi: usize| {
                u64::from(le32(d, lo))
                    | if is64 {
                        u64::from(le32(d, hi)) << 32
                    } else {
                        0
                    }
            };
            Desc {
                block_bitmap: at(0x0, 0x20),
                inode_bitmap: at(0x4, 0x24),
                inode_table: at(0x8, 0x28),
                flags: le16(d, 0x12),
            }
        })
        .collect())
}

/// Read the free map of the ext4 file system at the start of `g`.
pub(crate) fn free_map(g: &mut dyn Guest) -> Result<FreeMap, CannotTell> {
    let s = read_super(g)?;
    let descs = read_descs(g, &s)?;
    let mut map = FreeMap {
        block_size: s.block_size,
        blocks: s.blocks,
        free: vec![0; s.blocks.div_ceil(64) as usize],
        free_blocks: 0,
        sb_free_blocks: s.sb_free_blocks,
        first_data_block: s.first_data_block,
        blocks_per_group: s.blocks_per_group,
    };
    let itable_blocks = (s.inodes_per_group * s.inode_size).div_ceil(s.block_size);
    let mut bitmap = vec![0u8; s.block_size as usize];
    for (i, d) in descs.iter().enumerate() {
        let gi = i as u64;
        let (start, len) = (s.group_start(gi), s.group_len(gi));
        if d.flags & BG_BLOCK_UNINIT != 0 {
            uninit_group(&mut map, &s, &descs, gi, itable_blocks);
            continue;
        }
        if d.block_bitmap == 0 || d.block_bitmap >= s.blocks {
            return Err(cannot("a block bitmap lies outside the file system"));
        }
        g.read_at(&mut bitmap, d.block_bitmap * s.block_size)?;
        map.free_blocks += map.take_bitmap(&bitmap, start, len);
    }
    // A cleanly unmounted file system records the count its bitmaps give: a difference means
    // something here was read wrong (checksums are not verified) or the file system is not
    // consistent.
    if map.free_blocks != map.sb_free_blocks {
        return Err(cannot(
            "its bitmaps and its superblock disagree on how many blocks are free",
        ));
    }
    Ok(map)
}

/// A `BLOCK_UNINIT` group: free except its superblock backup and descriptor table, and any
/// group's bitmaps and inode table that lie in it (with `flex_bg` they may be another group's).
fn uninit_group(map: &mut FreeMap, s: &Super, descs: &[Desc], g: u64, itable_blocks: u64) {
    let (start, len) = (s.group_start(g), s.group_len(g));
    let end = start + len;
    let base = if s.has_super(g) {
        1 + s.gdt_blocks() + s.reserved_gdt
    } else {
        0
    };
    // Its bits are all clear until now (each group is taken in once).
    map.set((start + base).min(end), end, true);
    for d in descs {
        for (first, n) in [
            (d.block_bitmap, 1),
            (d.inode_bitmap, 1),
            (d.inode_table, itable_blocks),
        ] {
            map.set(first.max(start), first.saturating_add(n).min(end), false);
        }
    }
    map.free_blocks += map.count_free(start, end);
}
