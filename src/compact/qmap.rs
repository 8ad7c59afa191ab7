//! Reading a guest disk through qcow2's cluster mapping (QEMU `docs/interop/qcow2.txt`): the
//! L1 table, the L2 tables it points to, and down the backing chain for clusters a layer does
//! not map (to a raw base, or zeros past every layer).
//!
//! Read, per qcow2 layer: its header (112 bytes), its L1 table (8 bytes per 2^(2·bits−3) bytes
//! of virtual disk: 8 bytes per 512 MiB with 64 KiB clusters) and the L2 tables the reads touch
//! (one cluster each, every one of the top layer's to list what it maps: 64 KiB per 512 MiB of
//! virtual disk); then the guest bytes asked for. All of it counts against the one
//! [`Budget`].
//!
//! Refused ([`CannotTell`]): encryption, internal snapshots (a discarded cluster a snapshot
//! still refers to frees nothing), compressed clusters, the dirty or corrupt bit, an external
//! data file, extended L2 entries (subclusters), incompatible bits not known here, a backing
//! file in another format than qcow2 or raw, a chain deeper than [`MAX_DEPTH`] or looping.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::{open_disk, read_full, Budget, CannotTell, Guest};

/// Longest backing chain followed (QEMU itself allows more; SmolVM chains are one or two deep).
pub(crate) const MAX_DEPTH: usize = 16;

const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
const COMPRESSED: u64 = 1 << 62;
const ZERO: u64 = 1;

/// Whether QEMU reads a file name through a protocol (`file:`, `nbd:`, `json:`…) rather than
/// as a path: a colon before any slash (QEMU's `path_has_protocol`). Such a backing name is
/// not resolved here: `file:/a/base.raw` is `/a/base.raw` to QEMU, and a relative one is
/// relative to QEMU's working directory, not to the image's.
pub(crate) fn has_protocol(name: &str) -> bool {
    name.find([':', '/'])
        .is_some_and(|i| name.as_bytes()[i] == b':')
}

/// One qcow2 file of a chain.
struct Layer {
    file: File,
    cluster_bits: u32,
    size: u64,
    l1: Vec<u64>,
    l2: HashMap<usize, Vec<u64>>,
}

/// The rest of the chain under the last qcow2 layer.
enum Base {
    None,
    Raw { file: File, len: u64 },
}

/// A qcow2 image with its backing chain, read as the guest sees it.
pub(crate) struct Chain {
    layers: Vec<Layer>,
    base: Base,
    pub budget: Budget,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

fn cannot(why: &str) -> CannotTell {
    CannotTell(why.to_string())
}

/// Whether `file` starts with the qcow2 magic.
pub(crate) fn is_qcow2(file: &File) -> bool {
    let mut m = [0u8; 4];
    file.read_exact_at(&mut m, 0).is_ok() && m == crate::qcow2::MAGIC
}

fn layer(file: File, budget: &mut Budget) -> Result<Layer, CannotTell> {
    let mut h = [0u8; 112];
    let got = read_full(&file, &mut h, 0, budget)?;
    if got < 72 || h[..4] != crate::qcow2::MAGIC {
        return Err(cannot("its qcow2 header is truncated"));
    }
    let version = be32(&h, 4);
    let cluster_bits = be32(&h, 20);
    if !(version == 2 || version == 3) || !(9..=21).contains(&cluster_bits) {
        return Err(cannot("its qcow2 header is not one QEMU reads"));
    }
    if be32(&h, 32) != 0 {
        return Err(cannot("it is an encrypted qcow2 image"));
    }
    if be32(&h, 60) != 0 {
        return Err(cannot(
            "it has internal snapshots, which would keep the space",
        ));
    }
    if version == 3 {
        incompatible(be64(&h, 72))?;
    }
    let l1_size = u64::from(be32(&h, 36));
    budget.take(l1_size * 8)?;
    let mut raw = vec![0u8; (l1_size * 8) as usize];
    file.read_exact_at(&mut raw, be64(&h, 40))
        .map_err(|e| CannotTell(format!("its qcow2 L1 table could not be read: {e}")))?;
    let l1 = raw.chunks_exact(8).map(|c| be64(c, 0)).collect();
    Ok(Layer {
        file,
        cluster_bits,
        size: be64(&h, 24),
        l1,
        l2: HashMap::new(),
    })
}

fn incompatible(bits: u64) -> Result<(), CannotTell> {
    for (bit, why) in [
        (
            0,
            "its qcow2 image is marked dirty (QEMU repairs it on the next open)",
        ),
        (1, "its qcow2 image is marked corrupt"),
        (2, "its qcow2 image keeps its data in an external file"),
        (4, "its qcow2 image uses subclusters"),
    ] {
        if bits & (1 << bit) != 0 {
            return Err(cannot(why));
        }
    }
    if bits & !0b1_1111 != 0 {
        return Err(CannotTell(format!(
            "its qcow2 image has incompatible features not known here ({:#x})",
            bits & !0b1_1111
        )));
    }
    Ok(())
}

impl Chain {
    /// Open `path` (qcow2) and its backing chain.
    pub(crate) fn open(path: &Path, file: File, mut budget: Budget) -> Result<Chain, CannotTell> {
        let mut layers = vec![layer(file, &mut budget)?];
        let mut seen = Vec::new();
        let mut current: PathBuf = path.to_path_buf();
        let base = loop {
            let meta = layers.last().map(|l| l.file.metadata());
            if let Some(Ok(m)) = meta {
                if seen.contains(&(m.dev(), m.ino())) {
                    return Err(cannot("its backing chain loops"));
                }
                seen.push((m.dev(), m.ino()));
            }
            let header = crate::qcow2::read_header(&current)
                .map_err(|e| CannotTell(format!("its qcow2 header could not be read: {e}")))?;
            let Some(h) = header else {
                return Err(cannot("its qcow2 header could not be read"));
            };
            let Some(name) = h.backing_file else {
                break Base::None;
            };
            if has_protocol(&name) {
                return Err(CannotTell(format!(
                    "its backing file is named {:?}, which QEMU reads through a protocol, not \
                     as the path it looks like",
                    crate::pathser::escape_text(&name)
                )));
            }
            let next = crate::qcow2::resolve(&current, &name);
            let file = open_disk(&next).map_err(|e| {
                CannotTell(format!(
                    "its backing file {} could not be opened: {e}",
                    next.display()
                ))
            })?;
            let qcow2 = match h.backing_format.as_deref() {
                Some("qcow2") => true,
                Some("raw") => false,
                None => is_qcow2(&file),
                Some(other) => {
                    return Err(CannotTell(format!(
                        "its backing file is in the {other} format, not read here"
                    )))
                }
            };
            if !qcow2 {
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                break Base::Raw { file, len };
            }
            if layers.len() >= MAX_DEPTH {
                return Err(cannot("its backing chain is too deep"));
            }
            layers.push(layer(file, &mut budget)?);
            current = next;
        };
        Ok(Chain {
            layers,
            base,
            budget,
        })
    }

    /// The L2 entry of guest offset `off` in layer `i` (0: unallocated there).
    fn entry(&mut self, i: usize, off: u64) -> Result<u64, CannotTell> {
        let l = &mut self.layers[i];
        let bits = l.cluster_bits;
        let per_l2 = 1u64 << (bits - 3);
        let cluster = off >> bits;
        let l1i = (cluster / per_l2) as usize;
        let Some(&l1e) = l.l1.get(l1i) else {
            return Ok(0);
        };
        let table = l1e & OFFSET_MASK;
        if table == 0 {
            return Ok(0);
        }
        if !l.l2.contains_key(&l1i) {
            let mut raw = vec![0u8; 1 << bits];
            read_full(&l.file, &mut raw, table, &mut self.budget)?;
            let t = raw.chunks_exact(8).map(|c| be64(c, 0)).collect();
            l.l2.insert(l1i, t);
        }
        Ok(l.l2[&l1i][(cluster % per_l2) as usize])
    }

    /// Read `buf` at guest offset `off` of layer `i` (`layers.len()`: the base).
    fn read_layer(&mut self, i: usize, buf: &mut [u8], off: u64) -> Result<(), CannotTell> {
        if i == self.layers.len() {
            buf.fill(0);
            if let Base::Raw { file, len } = &self.base {
                if off < *len {
                    read_full(file, buf, off, &mut self.budget)?;
                }
            }
            return Ok(());
        }
        let (bits, size) = (self.layers[i].cluster_bits, self.layers[i].size);
        let mut done = 0usize;
        while done < buf.len() {
            let at = off + done as u64;
            let in_cluster = at & ((1 << bits) - 1);
            let n = ((1u64 << bits) - in_cluster).min((buf.len() - done) as u64) as usize;
            let piece = &mut buf[done..done + n];
            let e = if at < size { self.entry(i, at)? } else { ZERO };
            if e & COMPRESSED != 0 {
                return Err(cannot("its qcow2 image has compressed clusters"));
            }
            if e & ZERO != 0 {
                piece.fill(0);
            } else if e & OFFSET_MASK == 0 {
                self.read_layer(i + 1, piece, at)?;
            } else {
                let host = (e & OFFSET_MASK) + in_cluster;
                let file = &self.layers[i].file;
                piece.fill(0);
                read_full(file, piece, host, &mut self.budget)?;
            }
            done += n;
        }
        Ok(())
    }

    /// Device and inode of every file of the chain read, the top first (a raw base last).
    pub(crate) fn files(&self) -> Vec<(u64, u64)> {
        let base = match &self.base {
            Base::Raw { file, .. } => Some(file),
            Base::None => None,
        };
        self.layers
            .iter()
            .map(|l| &l.file)
            .chain(base)
            .filter_map(|f| f.metadata().ok().map(|m| (m.dev(), m.ino())))
            .collect()
    }

    /// Cluster size of the top layer, in bytes.
    pub(crate) fn cluster_size(&self) -> u64 {
        1 << self.layers[0].cluster_bits
    }

    /// Guest offsets of every cluster the top layer maps to a host cluster of its own.
    pub(crate) fn mapped_clusters(&mut self) -> Result<Vec<u64>, CannotTell> {
        let bits = self.layers[0].cluster_bits;
        let per_l2 = 1u64 << (bits - 3);
        let mut out = Vec::new();
        for l1i in 0..self.layers[0].l1.len() {
            let first = (l1i as u64 * per_l2) << bits;
            if self.layers[0].l1[l1i] & OFFSET_MASK == 0 || first >= self.layers[0].size {
                continue;
            }
            self.entry(0, first)?;
            for (j, e) in self.layers[0].l2[&l1i].iter().enumerate() {
                if e & COMPRESSED != 0 {
                    return Err(cannot("its qcow2 image has compressed clusters"));
                }
                if e & OFFSET_MASK != 0 {
                    out.push(first + ((j as u64) << bits));
                }
            }
        }
        Ok(out)
    }
}

impl Guest for Chain {
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> Result<(), CannotTell> {
        self.read_layer(0, buf, off)
    }
}
