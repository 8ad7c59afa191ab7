//! A Celesto data directory's disks: each sandbox id's disk with its companions, log and
//! `.retained` marker, judged as one group.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::fsread::{self, Entry};
use crate::inventory::celesto::{valid_sandbox_id, CelestoInventory};
use crate::model::{FindingKind, OptInClass, Verdict};

use crate::scan::ctx::{pid_list, Ctx, Draft};

use super::*;

/// What the judges of one data directory share.
pub(super) struct DataDir<'a> {
    dir: &'a Path,
    disks_dir: PathBuf,
    invs: &'a [CelestoInventory],
    ok: bool,
    problem: &'a str,
    vmm_ids: &'a HashMap<String, Vec<u32>>,
}

/// A disk (`<id>.qcow2` / `<id>.ext4` with exactly one dot) with its companions
/// (`<disk>.<anything>`), and how they are held.
pub(super) struct DiskGroup<'e> {
    id: String,
    disk: &'e Entry,
    companions: Vec<&'e Entry>,
    hold: Hold,
}

/// How a disk group's disk and companions are judged.
pub(super) struct GroupJudgement {
    kind: FindingKind,
    comp_kind: FindingKind,
    verdict: Verdict,
    reason: String,
    comp_reason: String,
    class: Option<OptInClass>,
}

pub(super) fn scan_data_dir(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    invs: &[CelestoInventory],
    live: &HashSet<String>,
    ok: bool,
    problem: &str,
    vmm_ids: &HashMap<String, Vec<u32>>,
) {
    let dd = DataDir {
        dir,
        disks_dir: dir.join("disks"),
        invs,
        ok,
        problem,
        vmm_ids,
    };
    let entries = fsread::read_dir_or_empty(&dd.disks_dir);
    let (mut groups, consumed) = disk_groups(&entries);
    for g in &mut groups {
        g.hold = dd.hold_of(ctx, g);
    }
    let id_hold = id_holds(&groups);
    for g in &groups {
        dd.add_group(ctx, g);
    }
    for (id, hold) in &id_hold {
        if let Some(d) = dd.group_log(id, hold) {
            ctx.add(dd.gated(d));
        }
    }
    // Companions whose disk is gone (upstream never finds these: B10), and anything else.
    let names: HashSet<String> = entries
        .iter()
        .filter_map(|e| e.name_str().map(str::to_string))
        .collect();
    for e in &entries {
        if let Some(d) = dd.loose_disk_entry(ctx, e, &names, &consumed) {
            ctx.add(dd.gated(d));
        }
    }
    // Logs with no disk: `<id>.log` directly in the data directory.
    for e in fsread::read_dir_or_empty(dir) {
        if let Some(d) = dd.diskless_log(ctx, &e, &id_hold) {
            ctx.add(dd.gated(d.root(dir)));
        }
    }
    scan_residue(ctx, dir, invs, live, ok, problem, vmm_ids, &id_hold);
}

/// The disk groups in `disks/` (all held `Orphan` until judged) and the names they take up.
pub(super) fn disk_groups(entries: &[Entry]) -> (Vec<DiskGroup<'_>>, HashSet<String>) {
    let mut consumed: HashSet<String> = HashSet::new();
    let mut groups: Vec<DiskGroup> = Vec::new();
    for e in entries {
        let Some(name) = e.name_str() else { continue };
        let Some((stem, ext)) = name.split_once('.') else {
            continue;
        };
        if stem.is_empty() || !(ext == "qcow2" || ext == "ext4") || e.is_dir() {
            continue;
        }
        if !(e.is_file() || e.is_symlink()) || !valid_sandbox_id(stem) {
            continue; // left for the unrecognised sweep
        }
        let prefix = format!("{name}.");
        let companions: Vec<&Entry> = entries
            .iter()
            .filter(|c| c.name_str().is_some_and(|n| n.starts_with(&prefix)) && !c.is_dir())
            .collect();
        consumed.insert(name.to_string());
        for c in &companions {
            consumed.insert(c.name_str().unwrap_or_default().to_string());
        }
        groups.push(DiskGroup {
            id: stem.to_string(),
            disk: e,
            companions,
            hold: Hold::Orphan,
        });
    }
    (groups, consumed)
}

/// The log of an id takes the most protective hold among its disks (upstream B11).
pub(super) fn id_holds(groups: &[DiskGroup<'_>]) -> HashMap<String, Hold> {
    let mut id_hold: HashMap<String, Hold> = HashMap::new();
    for g in groups {
        let h = id_hold.entry(g.id.clone()).or_insert(Hold::Orphan);
        if g.hold > *h {
            *h = g.hold.clone();
        }
    }
    id_hold
}

/// Nanoseconds since `mtime_ns`, by the scan's clock.
pub(super) fn age_ns(ctx: &Ctx<'_>, mtime_ns: i128) -> i128 {
    ctx.now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
        - mtime_ns
}

/// `<stem>.<qcow2|ext4>.<tail>` of a valid sandbox id whose disk is not in `names`: the id,
/// the disk's name and the tail.
pub(super) fn orphan_companion_name(
    name: &str,
    names: &HashSet<String>,
) -> Option<(String, String, String)> {
    let (stem, rest) = name.split_once('.')?;
    let (ext, tail) = rest.split_once('.')?;
    ((ext == "qcow2" || ext == "ext4")
        && !tail.is_empty()
        && valid_sandbox_id(stem)
        && !names.contains(&format!("{stem}.{ext}")))
    .then(|| (stem.to_string(), format!("{stem}.{ext}"), tail.to_string()))
}

/// How a disk group is judged, by its hold.
pub(super) fn group_judgement(g: &DiskGroup<'_>) -> GroupJudgement {
    let id = &g.id;
    let disk_name = g.disk.name.to_string_lossy().into_owned();
    let protected = |kind, comp_kind, reason, comp_reason| GroupJudgement {
        kind,
        comp_kind,
        verdict: Verdict::Protected,
        reason,
        comp_reason,
        class: None,
    };
    match &g.hold {
        Hold::Live(db) => protected(
            FindingKind::CelestoSandboxDisk,
            FindingKind::CelestoSandboxDiskCompanion,
            format!("Disk of sandbox '{id}', which exists in {db}."),
            format!("Companion of the disk of sandbox '{id}', which exists in {db}."),
        ),
        Hold::Creating(why) => protected(
            FindingKind::CelestoYoungDisk,
            FindingKind::CelestoYoungCompanion,
            format!("Disk of '{id}', which Celesto does not list yet, but a sandbox may be being created: {why}."),
            format!("Companion of disk '{disk_name}', which may be being created: {why}."),
        ),
        Hold::InUse(pids) => protected(
            FindingKind::CelestoInUseDisk,
            FindingKind::CelestoInUseCompanion,
            format!("Celesto does not list this disk's sandbox, but process {} is using it: a sandbox the Celesto SDK started without a record, or one still running after it was deleted.", pid_list(pids)),
            format!("Companion of disk '{disk_name}', which process {} is using.", pid_list(pids)),
        ),
        Hold::Saved => GroupJudgement {
            kind: FindingKind::CelestoSavedDisk,
            comp_kind: FindingKind::CelestoSavedCompanion,
            verdict: Verdict::OptIn,
            reason: format!("Saved disk of deleted sandbox '{id}' (it has a .retained marker); removed only if you include saved disks."),
            comp_reason: format!("Snapshot, backup or resize file of the saved disk '{disk_name}'; it goes with the disk, only if you include saved disks."),
            class: Some(OptInClass::SavedDisks),
        },
        Hold::Orphan => orphan_judgement(id, &disk_name, g.disk.is_symlink()),
    }
}

/// A disk group no inventory, process, create or marker holds.
pub(super) fn orphan_judgement(id: &str, disk_name: &str, symlink: bool) -> GroupJudgement {
    GroupJudgement {
        kind: if symlink {
            FindingKind::CelestoDiskSymlink
        } else {
            FindingKind::CelestoOrphanDisk
        },
        comp_kind: FindingKind::CelestoDiskCompanion,
        verdict: Verdict::Reclaimable,
        reason: if symlink {
            format!("Symbolic link named like the disk of sandbox '{id}', which no longer exists; removing the link frees no space and never touches its target.")
        } else {
            format!("Disk of sandbox '{id}', which Celesto no longer lists, and no process is using it.")
        },
        comp_reason: format!("Snapshot, backup or resize file of the orphaned disk '{disk_name}'; it goes with the disk."),
        class: None,
    }
}

impl DataDir<'_> {
    /// The inventory (file name) that keeps `id` alive, if any.
    fn db_of(&self, id: &str) -> Option<String> {
        self.invs
            .iter()
            .find(|i| i.live_ids().any(|x| x == id))
            .map(|i| {
                i.db_path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
    }

    /// Claimed by its sandbox id and gated by the inventories' health.
    fn gated(&self, d: Draft) -> Draft {
        gate(claim(d, self.dir), self.ok, self.problem)
    }

    fn log_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.log"))
    }

    /// `locks/<id>.create.lock`, and whether it is held right now.
    fn create_lock(&self, ctx: &Ctx<'_>, id: &str) -> (PathBuf, bool) {
        let lock = self.dir.join("locks").join(format!("{id}.create.lock"));
        let held = fsread::lstat(&lock).is_some_and(|m| {
            use std::os::unix::fs::MetadataExt;
            ctx.locks.is_held(&lock, m.dev(), m.ino())
        });
        (lock, held)
    }

    /// Processes using the group's disk, companions or log, or a VMM of its id.
    fn group_users(&self, ctx: &Ctx<'_>, g: &DiskGroup<'_>) -> Vec<u32> {
        let mut pids: Vec<u32> = self.vmm_ids.get(&g.id).cloned().unwrap_or_default();
        for p in std::iter::once(&g.disk.path)
            .chain(g.companions.iter().map(|c| &c.path))
            .chain(std::iter::once(&self.log_path(&g.id)))
        {
            // lstat: a scan never resolves through a symlink (that would touch its atime).
            let meta = fsread::lstat(p);
            pids.extend(ctx.procs.users_of(p, meta.as_ref()));
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// What holds a disk group: an inventory row, a process, a create, a `.retained` marker,
    /// or nothing.
    fn hold_of(&self, ctx: &Ctx<'_>, g: &DiskGroup<'_>) -> Hold {
        if let Some(db) = self.db_of(&g.id) {
            return Hold::Live(db);
        }
        let pids = self.group_users(ctx, g);
        if !pids.is_empty() {
            return Hold::InUse(pids);
        }
        let (create_lock, lock_held) = self.create_lock(ctx, &g.id);
        let newest = std::iter::once(&g.disk.meta)
            .chain(g.companions.iter().map(|c| &c.meta))
            .map(crate::scan::ctx::mtime_ns)
            .max()
            .unwrap_or(0);
        let age = age_ns(ctx, newest);
        if lock_held {
            return Hold::Creating(format!(
                "its create lock {} is held right now",
                create_lock.display()
            ));
        }
        if age < ctx.opts.age_guard.as_nanos() as i128 {
            return Hold::Creating(format!(
                "it changed {} s ago, and Celesto writes a disk before it lists the sandbox",
                (age.max(0) / 1_000_000_000)
            ));
        }
        let marker = self
            .disks_dir
            .join(format!("{}.retained", g.disk.name.to_string_lossy()));
        if marker_saves(&marker) {
            Hold::Saved
        } else {
            Hold::Orphan
        }
    }

    /// Add the group's disk and companions.
    fn add_group(&self, ctx: &mut Ctx<'_>, g: &DiskGroup<'_>) {
        let j = group_judgement(g);
        let mk = |k: FindingKind, p: &Path, r: String| {
            let d = Draft::new(P, k, p)
                .owner(g.id.as_str())
                .root(&self.disks_dir);
            let d = match j.class {
                Some(c) => d.opt_in(c, r),
                None => d.verdict(j.verdict, r),
            };
            self.gated(d)
        };
        ctx.add(mk(j.kind, &g.disk.path, j.reason.clone()));
        for c in &g.companions {
            ctx.add(mk(j.comp_kind, &c.path, j.comp_reason.clone()));
        }
    }

    /// The console log of a disk group's id, judged by the id's hold.
    fn group_log(&self, id: &str, hold: &Hold) -> Option<Draft> {
        let lp = self.log_path(id);
        if !fsread::lstat(&lp).is_some_and(|m| m.is_file()) {
            return None;
        }
        let d = Draft::new(P, FindingKind::CelestoOrphanLog, &lp)
            .owner(id)
            .root(self.dir);
        Some(match hold {
            Hold::Live(db) => Draft { kind: FindingKind::CelestoSandboxLog, ..d }
                .verdict(Verdict::Protected, format!("Console log of sandbox '{id}', which exists in {db}.")),
            Hold::Creating(why) => Draft { kind: FindingKind::CelestoYoungLog, ..d }.verdict(
                Verdict::Protected,
                format!("Console log of '{id}', which may be being created: {why}."),
            ),
            Hold::InUse(pids) => Draft { kind: FindingKind::CelestoInUseLog, ..d }.verdict(
                Verdict::Protected,
                format!("Console log of sandbox '{id}', whose disk process {} is using (Celesto's own clean-up would delete it: B3).", pid_list(pids)),
            ),
            Hold::Saved => Draft { kind: FindingKind::CelestoSavedLog, ..d }.opt_in(
                OptInClass::SavedDisks,
                format!("Console log of deleted sandbox '{id}', whose disk is saved; it goes with the disk, only if you include saved disks."),
            ),
            Hold::Orphan => d.verdict(
                Verdict::Reclaimable,
                format!("Console log of sandbox '{id}', which no longer exists."),
            ),
        })
    }

    /// An entry of `disks/` that no disk group took: an orphaned companion or unrecognised.
    fn loose_disk_entry(
        &self,
        ctx: &mut Ctx<'_>,
        e: &Entry,
        names: &HashSet<String>,
        consumed: &HashSet<String>,
    ) -> Option<Draft> {
        let Some(name) = e.name_str() else {
            ctx.add(
                Draft::new(P, FindingKind::CelestoUnrecognised, &e.path).verdict(
                    Verdict::Unknown,
                    "A file name that is not valid text; left alone.",
                ),
            );
            return None;
        };
        if consumed.contains(name) {
            return None;
        }
        Some(match orphan_companion_name(name, names) {
            Some((id, disk, tail)) if !e.is_dir() => self.orphan_companion(ctx, e, &id, &disk, &tail),
            _ => Draft::new(P, FindingKind::CelestoUnrecognised, &e.path).verdict(
                Verdict::Unknown,
                "Not a disk or companion name Celesto uses; Smolsweep leaves unrecognised files alone.",
            ),
        })
    }

    /// A companion file whose disk is gone, with the same guards as a disk's: a create in
    /// progress writes files before its row.
    fn orphan_companion(
        &self,
        ctx: &Ctx<'_>,
        e: &Entry,
        id: &str,
        disk: &str,
        tail: &str,
    ) -> Draft {
        let pids = ctx.procs.users_of(&e.path, Some(&e.meta));
        let d = Draft::new(P, FindingKind::CelestoOrphanCompanion, &e.path)
            .owner(id)
            .root(&self.disks_dir);
        let (create_lock, creating) = self.create_lock(ctx, id);
        let age_ns = age_ns(ctx, crate::scan::ctx::mtime_ns(&e.meta));
        if let Some(db) = self.db_of(id) {
            d.verdict(
                Verdict::Protected,
                format!("Companion file of sandbox '{id}', which exists in {db}."),
            )
        } else if !pids.is_empty() || self.vmm_ids.contains_key(id) {
            d.verdict(
                Verdict::Protected,
                format!("Companion file of '{disk}' held by a running process."),
            )
        } else if creating {
            Draft {
                kind: FindingKind::CelestoYoungCompanion,
                ..d
            }
            .verdict(
                Verdict::Protected,
                format!(
                    "Companion file of '{disk}'; its create lock {} is held right now.",
                    create_lock.display()
                ),
            )
        } else if age_ns < ctx.opts.age_guard.as_nanos() as i128 {
            Draft {
                kind: FindingKind::CelestoYoungCompanion,
                ..d
            }
            .verdict(
                Verdict::Protected,
                format!(
                    "Companion file of '{disk}', changed {} s ago; a sandbox may be being created.",
                    age_ns.max(0) / 1_000_000_000
                ),
            )
        } else if tail == "retained" {
            d.verdict(Verdict::Reclaimable, format!("A .retained marker whose disk '{disk}' is gone; Celesto's own clean-up never finds it (B10)."))
        } else {
            d.verdict(Verdict::Reclaimable, format!("Companion file of disk '{disk}', which is gone; Celesto's own clean-up never finds these (B10)."))
        }
    }

    /// `<id>.log` in the data directory whose disk is gone (those with a disk are judged with
    /// it); `None` for other files.
    fn diskless_log(
        &self,
        ctx: &Ctx<'_>,
        e: &Entry,
        id_hold: &HashMap<String, Hold>,
    ) -> Option<Draft> {
        let stem = e.name_str()?.strip_suffix(".log")?;
        if id_hold.contains_key(stem) && e.is_file() {
            return None; // handled with its disk
        }
        Some(if !e.is_file() || !valid_sandbox_id(stem) {
            Draft::new(P, FindingKind::CelestoUnrecognisedLog, &e.path).verdict(
                Verdict::Unknown,
                "Named like a log, but not a sandbox id Celesto would use (Celesto's own clean-up deletes these: B18); left alone.",
            )
        } else if let Some(db) = self.db_of(stem) {
            Draft::new(P, FindingKind::CelestoSandboxLog, &e.path)
                .owner(stem)
                .verdict(
                    Verdict::Protected,
                    format!("Console log of sandbox '{stem}', which exists in {db}."),
                )
        } else {
            let mut pids = ctx.procs.users_of(&e.path, Some(&e.meta));
            pids.extend(self.vmm_ids.get(stem).cloned().unwrap_or_default());
            if pids.is_empty() {
                Draft::new(P, FindingKind::CelestoOrphanLog, &e.path).owner(stem).verdict(
                    Verdict::Reclaimable,
                    format!("Console log of sandbox '{stem}', which no longer exists (its disk is gone too)."),
                )
            } else {
                Draft::new(P, FindingKind::CelestoInUseLog, &e.path)
                    .owner(stem)
                    .verdict(
                        Verdict::Protected,
                        format!(
                            "Console log of sandbox '{stem}', still written by process {}.",
                            pid_list(&pids)
                        ),
                    )
            }
        })
    }
}

/// Whether `disks/<disk>.retained` marks its disk as saved, judged as upstream does
/// (`Path.exists()`): a regular file or a link that resolves to something saves the disk; a
/// dangling link does not. Resolving a link is the one thing a scan does that the kernel may
/// record as a read: the link's own access time (never its target's, never a byte).
pub(super) fn marker_saves(marker: &Path) -> bool {
    match fsread::lstat(marker) {
        Some(m) if m.file_type().is_symlink() => std::fs::metadata(marker).is_ok(),
        Some(m) => m.is_file(),
        None => false,
    }
}
