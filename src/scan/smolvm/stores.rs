//! What smolvm shares between machines and keeps beside them: the shared extractions of packs
//! (`vms/_shared/<crc8>/` and the records beside each), the copy-on-write bases made from
//! them (`vms/_cow-bases/<sha256>/`), the leases that hold both (`<machine>/.pack-shared`),
//! and the pause records of paused machines (`vms/<hash16>.paused-*`).
//!
//! Each is judged as what it is on its own (a cache, a record of a cache, a leftover); what
//! holds it is declared as a hold of the reference graph (`crate::reach`), which protects it
//! while its holder stays, as upstream's own `pack prune` keeps what a lease reaches
//! (`src/artifact_cache.rs`).

use std::path::{Path, PathBuf};

use crate::fsread;
use crate::layout::{Place, Sub};
use crate::model::{FindingKind, Holder, Verdict, Via};
use crate::roots::SmolvmRootSet;
use crate::scan::ctx::{Ctx, Draft};

use super::{SetScan, P};

/// A machine directory's lease on a shared extraction, as its `.pack-shared` names it.
pub(super) struct Lease {
    /// The machine directory.
    pub dir: PathBuf,
    /// Its `.pack-shared` file.
    pub pointer: PathBuf,
    /// The extraction it leases, or why that cannot be read (upstream's own prune then stops
    /// without removing anything: it fails closed).
    pub target: Result<PathBuf, String>,
}

/// Every lease of the set's machine directories (`vms/<hash16>/.pack-shared`).
pub(super) fn read_leases(set: &SmolvmRootSet) -> Vec<Lease> {
    let mut out = Vec::new();
    for vms in &set.vms_dirs {
        for e in fsread::read_dir_or_empty(vms) {
            if !e.is_dir() || !e.name_str().is_some_and(crate::layout::is_machine_dir_name) {
                continue;
            }
            let pointer = e.path.join(".pack-shared");
            let Some(m) = fsread::lstat(&pointer) else {
                continue;
            };
            let target = if m.is_file() {
                lease_target(&pointer, &vms.join("_shared"))
            } else {
                Err(format!("{} is not a regular file", pointer.display()))
            };
            out.push(Lease {
                dir: e.path,
                pointer,
                target,
            });
        }
    }
    out
}

/// The extraction a `.pack-shared` names, checked as upstream checks it
/// (`canonical_shared_dir`): an absolute path of a real directory directly in this `vms/`'s
/// `_shared`, named by 8 hex digits.
fn lease_target(pointer: &Path, shared_root: &Path) -> Result<PathBuf, String> {
    let bytes = fsread::read_small(pointer, 4096).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_string())?;
    let target = PathBuf::from(text.trim());
    let named = |why: &str| format!("{} names {} ({why})", pointer.display(), target.display());
    if !target.is_absolute() {
        return Err(named("not an absolute path"));
    }
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    let within = target
        .parent()
        .and_then(canon)
        .zip(canon(shared_root))
        .is_some_and(|(a, b)| a == b);
    let hex8 = target
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| crate::layout::Name::Hex(8).matches(n));
    if !within || !hex8 {
        return Err(named("not an extraction of this shared store"));
    }
    Ok(shared_root.join(target.file_name().unwrap_or_default()))
}

impl SetScan<'_> {
    /// Why the set's leases cannot all be read: none of its shared extractions or bases is
    /// then offered (Smolsweep cannot tell which ones a machine needs).
    fn lease_problem(&self) -> Option<String> {
        self.leases.iter().find_map(|l| {
            let why = l.target.as_ref().err()?;
            Some(format!("A machine's lease could not be read ({why}), so Smolsweep cannot tell which shared extractions and bases machines need; none is offered."))
        })
    }

    /// Judge a store entry as a cache, unless the leases cannot be read.
    fn store(&self, d: Draft, what: &str, busy_what: &str) -> Draft {
        match self.lease_problem() {
            Some(why) => d.verdict(Verdict::Unknown, why),
            None => self.cache(d, what, busy_what),
        }
    }

    /// Each lease holds the extraction it names, through its `.pack-shared`.
    pub(super) fn declare_leases(&self, ctx: &mut Ctx<'_>) {
        for l in &self.leases {
            if let Ok(t) = &l.target {
                ctx.hold(t, Holder::Path(l.dir.clone()), Via::Lease, Some(&l.pointer));
            }
        }
    }

    /// `vms/_shared/`: each extraction, and each record beside one (judged with it, held by it).
    pub(super) fn judge_shared(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry) {
        for c in fsread::read_dir_or_empty(&e.path) {
            let name = c.name_str().unwrap_or_default().to_string();
            let d = Draft::new(P, FindingKind::SmolvmUnrecognised, &c.path).root(&e.path);
            let row = crate::layout::row(Place::In(Sub::SmolvmShared), &name);
            let d = match row.and_then(|r| r.kinds().first()) {
                Some(FindingKind::SmolvmSharedPack) if c.is_dir() => self.extraction(ctx, &c, d),
                Some(FindingKind::SmolvmSharedPackSidecar) if !c.is_dir() => {
                    self.sidecar(ctx, &c, &name, d)
                }
                _ => d.verdict(
                    Verdict::Unknown,
                    "Not something smolvm writes in its shared image store; left alone.",
                ),
            };
            ctx.add(self.gate(d));
        }
    }

    /// One extraction: a cache; its artifact digest keeps its copy-on-write bases.
    fn extraction(&self, ctx: &mut Ctx<'_>, c: &fsread::Entry, d: Draft) -> Draft {
        let digest = fsread::read_small(&c.path.with_extension("artifact-sha256"), 256)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| crate::layout::Name::Hex(64).matches(s));
        if let (Some(digest), Some(vms)) = (digest, c.path.parent().and_then(Path::parent)) {
            let bases = vms.join("_cow-bases").join(digest);
            ctx.hold(&bases, Holder::Path(c.path.clone()), Via::Digest, None);
        }
        let d = Draft {
            kind: FindingKind::SmolvmSharedPack,
            ..d
        };
        self.store(
            d,
            "Shared pack extraction; extracted again from its pack when a machine needs it.",
            "Shared pack extraction",
        )
    }

    /// A record beside an extraction (`<crc8>.lock`, `.artifact-sha256`, ...): with its
    /// extraction, a cache held by it; without one, left over (upstream's prune never sees it).
    fn sidecar(&self, ctx: &mut Ctx<'_>, c: &fsread::Entry, name: &str, d: Draft) -> Draft {
        let crc = name.split('.').next().unwrap_or_default();
        let extraction = c.path.with_file_name(crc);
        let d = Draft {
            kind: FindingKind::SmolvmSharedPackSidecar,
            ..d
        };
        if fsread::lstat(&extraction).is_some_and(|m| m.is_dir()) {
            ctx.hold(&c.path, Holder::Path(extraction), Via::Sidecar, None);
            self.store(
                d,
                "Record of a shared pack extraction; it goes with its extraction.",
                "Record of a shared pack extraction",
            )
        } else {
            d.verdict(
                Verdict::Reclaimable,
                format!("Record of the shared pack extraction {crc}, which is gone; smolvm's own prune never removes it."),
            )
        }
    }

    /// `vms/_cow-bases/`: each artifact's bases, a cache held by the extraction of that digest
    /// (declared there) and by every disk that backs onto them (the backing chains).
    pub(super) fn judge_cow_bases(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry) {
        for c in fsread::read_dir_or_empty(&e.path) {
            let name = c.name_str().unwrap_or_default().to_string();
            let vms = e.path.parent().unwrap_or(&e.path);
            let d = Draft::new(P, FindingKind::SmolvmCowBases, &c.path).root(vms);
            let known = crate::layout::row(Place::In(Sub::SmolvmCowBases), &name).is_some();
            let d = if known && c.is_dir() {
                self.store(
                    d,
                    "Copy-on-write disk bases of a pack artifact; made again when a machine is created from that pack.",
                    "Copy-on-write disk bases",
                )
            } else {
                Draft {
                    kind: FindingKind::SmolvmUnrecognised,
                    ..d
                }
                .verdict(
                    Verdict::Unknown,
                    "Not something smolvm writes among its copy-on-write bases; left alone.",
                )
            };
            ctx.add(self.gate(d));
        }
    }

    /// `<hash16>.paused-disks` / `.paused-layers`: held by the machine directory `<hash16>`
    /// while it exists (and by a record of that hash); a leftover once both are gone.
    pub(super) fn judge_pause_record(&self, ctx: &mut Ctx<'_>, vms: &Path, e: &fsread::Entry) {
        let name = e.name_str().unwrap_or_default();
        let hash = &name[..16.min(name.len())];
        let dir = vms.join(hash);
        let d = Draft::new(P, FindingKind::SmolvmPauseRecord, &e.path).root(vms);
        let d = match self.out.hash_to_name.get(hash) {
            Some(m) => {
                let by = Holder::Record {
                    product: P,
                    name: m.clone(),
                };
                ctx.hold(&e.path, by, Via::Pause, Some(&self.set.db_path));
                d.owner(m.as_str())
            }
            None => d,
        };
        let d = if fsread::lstat(&dir).is_some_and(|m| m.is_dir()) {
            ctx.hold(&e.path, Holder::Path(dir), Via::Pause, None);
            d.verdict(
                Verdict::Reclaimable,
                "Pause record of a machine directory with no record; it goes with that directory.",
            )
        } else if super::ago(ctx, fsread::newest_mtime(&e.path).unwrap_or(i128::MAX))
            < ctx.opts.age_guard
        {
            d.verdict(
                Verdict::Protected,
                "Pause record changed moments ago: a pause may be under way.",
            )
        } else {
            d.verdict(
                Verdict::Reclaimable,
                "Pause record of a machine whose directory is gone: it can never resume (smolvm sweeps these only once it notices).",
            )
        };
        ctx.add(self.gate(d));
    }
}
