//! Celesto SmolVM (and legacy PyPI smolvm): sandboxes, disks, logs, image caches and residue.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::fsread::{self, Entry};
use crate::inventory::celesto::{read_celesto_db, valid_sandbox_id, CelestoInventory};
use crate::model::{
    FindingKind, Machine, OptInClass, OwnerRecord, Product, ProductReport, Verdict,
};
use crate::roots::{celesto_roots, CelestoRoots};

use super::version::{cache_version, Version};
use super::{Ctx, Draft};

const P: Product = Product::Celesto;

/// One Celesto data directory as the scan understood it.
#[derive(Debug, Clone)]
pub(crate) struct CelData {
    pub dir: PathBuf,
    /// Ids kept alive by any inventory in the directory (`celesto.db` ∪ `smolvm.db`, browser
    /// sessions included).
    pub live: HashSet<String>,
    /// Whether the inventories could be read.
    pub ok: bool,
}

/// What the Celesto part of the scan learnt, for process attribution.
#[derive(Debug, Default)]
pub(crate) struct CelestoKnowledge {
    pub data_dirs: Vec<CelData>,
}

impl CelestoKnowledge {
    pub(crate) fn data_dir_of(&self, path: &Path) -> Option<&CelData> {
        self.data_dirs.iter().find(|d| path.starts_with(&d.dir))
    }
    pub(crate) fn data_dir_with_disk(&self, id: &str) -> Option<&CelData> {
        self.data_dirs.iter().find(|d| {
            ["qcow2", "ext4"]
                .iter()
                .any(|e| fsread::lstat(&d.dir.join("disks").join(format!("{id}.{e}"))).is_some())
        })
    }
}

/// How a disk group (a sandbox id's disk, companions and log) is held.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Hold {
    Orphan,
    Saved,
    /// A create may be under way: the disk is written before the row, under
    /// `locks/<id>.create.lock`.
    Creating(String),
    InUse(Vec<u32>),
    Live(String),
}

fn is_celesto_data_dir(dir: &Path) -> bool {
    crate::roots::celesto_data_markers().any(|n| fsread::lstat(&dir.join(n)).is_some())
}

/// The file names of Celesto's inventories, for a sentence: `celesto.db or smolvm.db`.
fn inventory_names() -> String {
    let names: Vec<&str> = crate::upstream::inventories(P).map(|i| i.name).collect();
    names.join(" or ")
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Downgrade a draft when the data directory's inventory could not be verified.
fn gate(d: Draft, ok: bool, problem: &str) -> Draft {
    if ok || !matches!(d.verdict, Verdict::Reclaimable | Verdict::OptIn) {
        return d;
    }
    let reason = format!(
        "{} But {problem}, so Smolsweep cannot verify it is unused and leaves it alone.",
        d.reason
    );
    let mut d = d.verdict(Verdict::Unknown, reason);
    d.opt_in_class = None;
    d
}

/// A finding that belongs to a sandbox id is re-checked against its data directory's
/// inventories before deletion (the same ones the scan judged it by).
fn claim(d: Draft, data_dir: &Path) -> Draft {
    match d.owner.clone() {
        Some(id) => d.recheck(
            &crate::upstream::inventory_paths(P, data_dir),
            OwnerRecord::SandboxId(id),
        ),
        None => d,
    }
}

/// One Celesto data directory with the inventories read from it.
struct InvDir {
    dir: PathBuf,
    invs: Vec<CelestoInventory>,
    /// Whether there is an inventory and every one could be read.
    ok: bool,
    /// Why not, when not.
    problem: String,
}

pub(crate) fn scan(ctx: &mut Ctx<'_>) -> CelestoKnowledge {
    let roots = celesto_roots(ctx.opts.platform, &ctx.opts.env);
    let mut problems = Vec::new();
    let mut report_roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    let vmm_ids = ctx.procs.celesto_vmm_ids();

    // Inventories first: live ids across every data directory are needed for residue.
    let dirs = read_data_dirs(ctx, &roots, &mut problems, &mut report_roots);
    let know = knowledge_of(&dirs);
    let all_ok = know.data_dirs.iter().all(|d| d.ok);
    let live_all: HashSet<String> = know
        .data_dirs
        .iter()
        .flat_map(|d| d.live.iter().cloned())
        .collect();
    let depends = image_dependencies(&dirs, &mut ctx.chains);

    for d in &dirs {
        for inv in &d.invs {
            sandboxes_as_machines(ctx, inv, &vmm_ids);
        }
    }
    for (i, d) in dirs.iter().enumerate() {
        let live = know.data_dirs[i].live.clone();
        scan_data_dir(ctx, &d.dir, &d.invs, &live, d.ok, &d.problem, &vmm_ids);
    }
    scan_forwards(ctx, &roots, &vmm_ids, &live_all, &know, all_ok);
    // Sockets and libkrun configs in /tmp.
    scan_socket_dir(ctx, &roots.socket_dir, &live_all, &vmm_ids, &know, all_ok);
    scan_image_dirs(ctx, &roots, &depends, &mut report_roots);
    report_product(ctx, &roots, &know, report_roots, problems, all_ok);
    know
}

/// Every Celesto data directory among the roots (each once, markers required) with its
/// inventories read, named in the report's roots (`data_dir`, `data_dir_2`, ...); a directory
/// whose inventories cannot be verified adds its problem.
fn read_data_dirs(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    problems: &mut Vec<String>,
    report_roots: &mut BTreeMap<String, PathBuf>,
) -> Vec<InvDir> {
    let mut seen_dirs = HashSet::new();
    let mut dirs = Vec::new();
    for cand in &roots.data_dirs {
        let dir = &cand.path;
        if !dir.is_dir() || !seen_dirs.insert(canon(dir)) || !is_celesto_data_dir(dir) {
            continue;
        }
        let d = read_data_dir(ctx, dir);
        if !d.ok {
            problems.push(d.problem.clone());
        }
        let key = if report_roots.keys().any(|k| k.starts_with("data_dir")) {
            format!("data_dir_{}", report_roots.len() + 1)
        } else {
            "data_dir".to_string()
        };
        report_roots.insert(key, dir.clone());
        dirs.push(d);
    }
    dirs
}

/// The inventories of one data directory (odd inventory files reported as findings), and
/// whether they verify it: not when there is none, or one cannot be read.
fn read_data_dir(ctx: &mut Ctx<'_>, dir: &Path) -> InvDir {
    let mut invs = Vec::new();
    let mut ok = true;
    let mut problem = String::new();
    let dbs: Vec<PathBuf> = crate::upstream::inventory_paths(P, dir)
        .into_iter()
        .filter(|p| fsread::lstat(p).is_some())
        .collect();
    odd_inventory_files(ctx, dir, &dbs);
    if dbs.is_empty() {
        ok = false;
        problem = format!(
            "there is no list of sandboxes ({}) in {}: sandboxes made with the Celesto SDK alone are listed nowhere, so a live sandbox's disk cannot be told from an orphan. Running any `celesto` command once creates the list; then only disks of no listed sandbox that no process uses become reclaimable",
            inventory_names(),
            dir.display()
        );
    }
    for db in dbs {
        match ctx.read_inventory(&db, read_celesto_db, crate::inventory::cache::celesto) {
            Ok(inv) => invs.push(inv),
            Err(e) => {
                ok = false;
                problem = e.to_string();
            }
        }
    }
    InvDir {
        dir: dir.to_path_buf(),
        invs,
        ok,
        problem,
    }
}

/// What process attribution needs of the data directories: each one's live ids and whether its
/// inventories were read.
fn knowledge_of(dirs: &[InvDir]) -> CelestoKnowledge {
    let mut know = CelestoKnowledge::default();
    for d in dirs {
        let live = d
            .invs
            .iter()
            .flat_map(|i| i.live_ids().map(str::to_string))
            .collect();
        know.data_dirs.push(CelData {
            dir: d.dir.clone(),
            live,
            ok: d.ok,
        });
    }
    know
}

/// Paths sandboxes depend on inside image caches (Celesto B1), with the sandbox id: the
/// kernel, initrd and rootfs an inventory row names, and the backing chain of every disk.
fn image_dependencies(
    dirs: &[InvDir],
    memo: &mut crate::qcow2::ChainMemo,
) -> Vec<(PathBuf, String)> {
    let mut depends: Vec<(PathBuf, String)> = Vec::new();
    for d in dirs {
        for inv in &d.invs {
            for s in &inv.sandboxes {
                for p in [&s.kernel_path, &s.initrd_path, &s.rootfs_path]
                    .into_iter()
                    .flatten()
                {
                    depends.push((p.clone(), s.id.clone()));
                }
            }
        }
        for e in fsread::read_dir_or_empty(&d.dir.join("disks")) {
            if e.is_file() {
                let owner = e
                    .name_str()
                    .and_then(|n| n.split('.').next())
                    .unwrap_or("?")
                    .to_string();
                for b in crate::qcow2::chain_in(memo, &e.path, 16).0.links {
                    depends.push((b, owner.clone()));
                }
            }
        }
    }
    depends
}

/// `~/.celesto/forwards` and the legacy `~/.smolvm/forwards`: port-forward state of a sandbox
/// id is judged as that sandbox's residue; anything else is left alone.
fn scan_forwards(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    vmm_ids: &HashMap<String, Vec<u32>>,
    live_all: &HashSet<String>,
    know: &CelestoKnowledge,
    all_ok: bool,
) {
    for home_dir in [&roots.home_dir, &roots.legacy_home_dir] {
        let fwd = home_dir.join("forwards");
        for e in fsread::read_dir_or_empty(&fwd) {
            let Some(name) = e.name_str() else { continue };
            let id = name
                .strip_suffix(".operation.lock")
                .or_else(|| name.strip_suffix(".json"));
            let d = Draft::new(P, FindingKind::CelestoForwardResidue, &e.path).root(&fwd);
            let d = match id {
                Some(id) if valid_sandbox_id(id) && e.is_file() => sandbox_residue(
                    d,
                    id,
                    "Port-forward state",
                    vmm_ids.contains_key(id),
                    live_all,
                    know,
                    all_ok,
                ),
                _ => d.verdict(
                    Verdict::Unknown,
                    "Not a file Celesto writes under forwards/; left alone.",
                ),
            };
            ctx.add(d);
        }
    }
}

/// Image caches, each once, named in the report's roots (`image_dir`, `image_dir_2`, ...).
/// Versions in cache names are the version of the distribution that wrote them (celesto
/// 0.1.x, PyPI smolvm 0.0.x): each directory is judged against the installed versions of the
/// distributions that use it.
fn scan_image_dirs(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    depends: &[(PathBuf, String)],
    report_roots: &mut BTreeMap<String, PathBuf>,
) {
    let installs = ctx.installs.clone();
    let installed_of = |dists: &[&str]| -> Vec<(String, Version)> {
        installs
            .iter()
            .filter(|i| i.product == Product::Celesto)
            .filter(|i| dists.contains(&i.distribution.as_deref().unwrap_or("celesto")))
            .filter_map(|i| {
                let v = i.version.as_ref()?;
                Some((v.clone(), Version::parse(v)?))
            })
            .collect()
    };
    let mut seen_images = HashSet::new();
    for cand in &roots.image_dirs {
        let dir = &cand.path;
        if !dir.is_dir() || !seen_images.insert(canon(dir)) {
            continue;
        }
        let key = if report_roots.contains_key("image_dir") {
            format!("image_dir_{}", seen_images.len())
        } else {
            "image_dir".to_string()
        };
        report_roots.insert(key, dir.clone());
        let mut dists = Vec::new();
        if cand.source == "CELESTO_IMAGE_DIR" || dir.ends_with(".celesto/images") || cand.preferred
        {
            dists.push("celesto");
        }
        if cand.source == "SMOLVM_IMAGE_DIR" || dir.ends_with(".smolvm/images") {
            dists.push("smolvm");
        }
        let installed = installed_of(&dists);
        scan_image_dir(ctx, dir, &installed, depends, &dists);
    }
}

/// Celesto's product report: detected when a data directory, an image cache, the home
/// directory or an install was found; `unknown` when an inventory could not be verified.
fn report_product(
    ctx: &mut Ctx<'_>,
    roots: &CelestoRoots,
    know: &CelestoKnowledge,
    mut report_roots: BTreeMap<String, PathBuf>,
    problems: Vec<String>,
    all_ok: bool,
) {
    let home_exists = roots.home_dir.is_dir();
    if home_exists {
        report_roots.insert("home_dir".into(), roots.home_dir.clone());
    }
    report_roots.insert("socket_dir".into(), roots.socket_dir.clone());
    let detected = !know.data_dirs.is_empty()
        || report_roots.keys().any(|k| k.starts_with("image_dir"))
        || home_exists
        || ctx.installs.iter().any(|i| i.product == Product::Celesto);
    let version = ctx
        .installs
        .iter()
        .find(|i| i.product == Product::Celesto)
        .and_then(|i| i.version.clone());
    ctx.products.push(ProductReport {
        product: P,
        detected,
        status: if all_ok { "ok" } else { "unknown" }.into(),
        roots: report_roots,
        problems,
        version,
        newer: None,
    });
}

#[allow(clippy::too_many_arguments)]
/// Every sandbox row of `inv` as a machine (Celesto calls them sandboxes, lately computers):
/// its state as recorded, and whether its VM is alive. Celesto records a pid but no start time,
/// so a row is alive when its pid is a Celesto VM process naming this sandbox, or any process
/// when none names it.
fn sandboxes_as_machines(
    ctx: &mut Ctx<'_>,
    inv: &CelestoInventory,
    vmm_ids: &HashMap<String, Vec<u32>>,
) {
    let disks = inv
        .db_path
        .parent()
        .map(|d| fsread::read_dir_or_empty(&d.join("disks")))
        .unwrap_or_default();
    for s in &inv.sandboxes {
        let pid = s.pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let vmms = vmm_ids.get(&s.id);
        let alive = match (pid, vmms) {
            (Some(p), Some(v)) => v.contains(&p),
            (Some(p), None) => ctx.procs.by_pid(p).is_some(),
            (None, _) => false,
        };
        let effective = match s.status.as_str() {
            "running" if !alive => match pid {
                Some(_) => "stale: recorded running, process gone".to_string(),
                None => "stale: recorded running without a process".to_string(),
            },
            st => st.to_string(),
        };
        let dir = disks
            .iter()
            .find(|e| e.name_str().and_then(|n| n.split('.').next()) == Some(s.id.as_str()))
            .map(|e| e.path.clone());
        ctx.machines.push(Machine {
            product: P,
            name: s.id.clone(),
            state: s.status.clone(),
            pid,
            alive,
            effective_state: effective,
            pid_start_time: pid
                .filter(|_| alive)
                .and_then(|p| ctx.procs.by_pid(p))
                .map(|p| p.start_time),
            ephemeral: false,
            created_at: None,
            dir,
            allocated_bytes: 0,
            db: Some(inv.db_path.clone()),
            branched_from: None,
            kept: None,
        });
    }
}

/// What the judges of one data directory share.
struct DataDir<'a> {
    dir: &'a Path,
    disks_dir: PathBuf,
    invs: &'a [CelestoInventory],
    ok: bool,
    problem: &'a str,
    vmm_ids: &'a HashMap<String, Vec<u32>>,
}

/// A disk (`<id>.qcow2` / `<id>.ext4` with exactly one dot) with its companions
/// (`<disk>.<anything>`), and how they are held.
struct DiskGroup<'e> {
    id: String,
    disk: &'e Entry,
    companions: Vec<&'e Entry>,
    hold: Hold,
}

/// How a disk group's disk and companions are judged.
struct GroupJudgement {
    kind: FindingKind,
    comp_kind: FindingKind,
    verdict: Verdict,
    reason: String,
    comp_reason: String,
    class: Option<OptInClass>,
}

fn scan_data_dir(
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
fn disk_groups(entries: &[Entry]) -> (Vec<DiskGroup<'_>>, HashSet<String>) {
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
fn id_holds(groups: &[DiskGroup<'_>]) -> HashMap<String, Hold> {
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
fn age_ns(ctx: &Ctx<'_>, mtime_ns: i128) -> i128 {
    ctx.now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
        - mtime_ns
}

/// `<stem>.<qcow2|ext4>.<tail>` of a valid sandbox id whose disk is not in `names`: the id,
/// the disk's name and the tail.
fn orphan_companion_name(name: &str, names: &HashSet<String>) -> Option<(String, String, String)> {
    let (stem, rest) = name.split_once('.')?;
    let (ext, tail) = rest.split_once('.')?;
    ((ext == "qcow2" || ext == "ext4")
        && !tail.is_empty()
        && valid_sandbox_id(stem)
        && !names.contains(&format!("{stem}.{ext}")))
    .then(|| (stem.to_string(), format!("{stem}.{ext}"), tail.to_string()))
}

/// How a disk group is judged, by its hold.
fn group_judgement(g: &DiskGroup<'_>) -> GroupJudgement {
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
fn orphan_judgement(id: &str, disk_name: &str, symlink: bool) -> GroupJudgement {
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
            ctx.locks.is_held(m.dev(), m.ino())
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
            .map(super::mtime_ns)
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
        let age_ns = age_ns(ctx, super::mtime_ns(&e.meta));
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

#[allow(clippy::too_many_arguments)]
fn scan_residue(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    invs: &[CelestoInventory],
    live: &HashSet<String>,
    ok: bool,
    problem: &str,
    vmm_ids: &HashMap<String, Vec<u32>>,
    id_hold: &HashMap<String, Hold>,
) {
    let r = Residue {
        dir,
        invs,
        live,
        ok,
        problem,
        vmm_ids,
        id_hold,
    };
    r.firmware(ctx);
    r.locks(ctx);
    r.known_hosts(ctx);
    r.snapshots(ctx);
    r.sessions_and_macos_vms(ctx);
}

/// What the residue judges of one data directory share.
struct Residue<'a> {
    dir: &'a Path,
    invs: &'a [CelestoInventory],
    live: &'a HashSet<String>,
    ok: bool,
    problem: &'a str,
    vmm_ids: &'a HashMap<String, Vec<u32>>,
    id_hold: &'a HashMap<String, Hold>,
}

impl Residue<'_> {
    /// Whether sandbox `id`'s disk is saved (its residue is kept with it).
    fn saved(&self, id: &str) -> bool {
        matches!(self.id_hold.get(id), Some(Hold::Saved))
    }

    /// Whether a Celesto VM process names sandbox `id`.
    fn running(&self, id: &str) -> bool {
        self.vmm_ids.contains_key(id)
    }

    /// Adds `d`, re-checked against the directory's inventories and gated on them.
    fn add(&self, ctx: &mut Ctx<'_>, d: Draft) {
        ctx.add(gate(claim(d, self.dir), self.ok, self.problem));
    }

    /// `firmware/<id>/`: kept while the sandbox exists, runs or its disk is saved; else residue.
    fn firmware(&self, ctx: &mut Ctx<'_>) {
        let fw = self.dir.join("firmware");
        for e in fsread::read_dir_or_empty(&fw) {
            let id = e.name_str().unwrap_or_default().to_string();
            let d = Draft::new(P, FindingKind::CelestoFirmwareResidue, &e.path)
                .owner(id.as_str())
                .root(&fw);
            let d = if !valid_sandbox_id(&id) || !e.is_dir() {
                d.verdict(
                    Verdict::Unknown,
                    "Not a sandbox firmware directory; left alone.",
                )
            } else if self.live.contains(&id)
                || self.running(&id)
                || !ctx.procs.users_below(&e.path).is_empty()
            {
                d.verdict(
                    Verdict::Protected,
                    format!("Firmware state of sandbox '{id}', which exists or is running."),
                )
            } else if self.saved(&id) {
                d.opt_in(
                    OptInClass::SavedDisks,
                    format!("Firmware state of deleted sandbox '{id}', whose disk is saved; it goes with the disk, only if you include saved disks."),
                )
            } else {
                d.opt_in(OptInClass::Residue, format!("Firmware state (UEFI variables, TPM) of deleted sandbox '{id}'; Celesto never removes it."))
            };
            self.add(ctx, d);
        }
    }

    /// `locks/` and `locks/resources/`: every lock file not held by a process right now.
    fn locks(&self, ctx: &mut Ctx<'_>) {
        let locks_dir = self.dir.join("locks");
        let mut lock_entries = fsread::read_dir_or_empty(&locks_dir);
        lock_entries.extend(fsread::read_dir_or_empty(&locks_dir.join("resources")));
        let snapshot_ids: HashSet<String> = self
            .invs
            .iter()
            .flat_map(|i| i.snapshots.iter().map(|(s, _)| s.clone()))
            .chain(
                fsread::read_dir_or_empty(&self.dir.join("snapshots"))
                    .into_iter()
                    .filter_map(|e| e.name_str().map(str::to_string)),
            )
            .collect();
        for e in lock_entries {
            if e.is_dir() {
                continue;
            }
            let d = Draft::new(P, FindingKind::CelestoLockResidue, &e.path).root(&locks_dir);
            let d = self.lock(ctx, &e, d, &snapshot_ids);
            self.add(ctx, d);
        }
    }

    /// One lock file: unknown when the lock table is unreadable, kept while held or while the
    /// snapshot or sandbox it names exists, else reclaimable.
    fn lock(&self, ctx: &Ctx<'_>, e: &Entry, d: Draft, snapshot_ids: &HashSet<String>) -> Draft {
        use std::os::unix::fs::MetadataExt;
        let name = e.name_str().unwrap_or_default().to_string();
        let held = ctx.locks.is_held(e.meta.dev(), e.meta.ino());
        let in_resources = e.path.parent().is_some_and(|p| p.ends_with("resources"));
        let id = name
            .strip_suffix(".create.lock")
            .or_else(|| name.strip_suffix(".snapshot.lock"));
        if !ctx.locks.readable() {
            d.verdict(Verdict::Unknown, "Lock file; the system lock table is not readable here, so Smolsweep cannot tell whether it is held.")
        } else if held {
            d.verdict(
                Verdict::Protected,
                "Lock file held by a running process right now.",
            )
        } else if in_resources {
            d.verdict(
                Verdict::Reclaimable,
                "Lock claiming an address or port for a sandbox, left by a Celesto process that has exited; nothing holds it.",
            )
        } else if let Some(sid) = name
            .strip_prefix("snapshot-")
            .and_then(|s| s.strip_suffix(".lock"))
        {
            if snapshot_ids.contains(sid) {
                d.verdict(
                    Verdict::Protected,
                    format!("Lock of snapshot '{sid}', which exists."),
                )
            } else {
                d.verdict(Verdict::Reclaimable, format!("Lock of snapshot '{sid}', which no longer exists; Celesto never removes lock files."))
            }
        } else if let Some(id) = id.filter(|i| valid_sandbox_id(i)) {
            let d = d.owner(id);
            if self.live.contains(id) || self.running(id) {
                d.verdict(
                    Verdict::Protected,
                    format!("Lock file of sandbox '{id}', which exists."),
                )
            } else {
                d.verdict(Verdict::Reclaimable, format!("Lock file of sandbox '{id}', which no longer exists; Celesto never removes lock files (B21)."))
            }
        } else {
            d.verdict(
                Verdict::Unknown,
                "A lock file Smolsweep does not recognise; left alone.",
            )
        }
    }

    /// `ssh-known-hosts/<id>.known_hosts`: kept while the sandbox exists, runs or its disk is
    /// saved; else reclaimable.
    fn known_hosts(&self, ctx: &mut Ctx<'_>) {
        let kh = self.dir.join("ssh-known-hosts");
        for e in fsread::read_dir_or_empty(&kh) {
            let name = e.name_str().unwrap_or_default().to_string();
            let d = Draft::new(P, FindingKind::CelestoKnownHostsResidue, &e.path).root(&kh);
            let d = match name.strip_suffix(".known_hosts").filter(|i| valid_sandbox_id(i) && e.is_file()) {
                Some(id) if self.live.contains(id) || self.running(id) => d.owner(id).verdict(Verdict::Protected, format!("Pinned SSH host key of sandbox '{id}', which exists.")),
                Some(id) if self.saved(id) => d.owner(id).opt_in(OptInClass::SavedDisks, format!("Pinned SSH host key of deleted sandbox '{id}', whose disk is saved; it goes with the disk, only if you include saved disks.")),
                Some(id) => d.owner(id).verdict(Verdict::Reclaimable, format!("Pinned SSH host key of sandbox '{id}', which no longer exists; Celesto never removes it.")),
                None => d.verdict(Verdict::Unknown, "Not a known-hosts file Celesto writes; left alone."),
            };
            self.add(ctx, d);
        }
    }

    /// `snapshots/<sid>/`: kept while its sandbox exists; otherwise residue (still restorable).
    fn snapshots(&self, ctx: &mut Ctx<'_>) {
        let snap_vm: HashMap<String, String> = self
            .invs
            .iter()
            .flat_map(|i| i.snapshots.iter().cloned())
            .collect();
        let sd = self.dir.join("snapshots");
        for e in fsread::read_dir_or_empty(&sd) {
            let sid = e.name_str().unwrap_or_default().to_string();
            let vm = snap_vm.get(&sid).cloned();
            let d = Draft::new(P, FindingKind::CelestoSnapshot, &e.path)
                .owner_opt(vm.clone())
                .root(&sd);
            let d = match vm {
                Some(vm) if self.live.contains(&vm) => d.verdict(Verdict::Protected, format!("Snapshot '{sid}' of sandbox '{vm}', which exists.")),
                Some(vm) => d.opt_in(OptInClass::Residue, format!("Snapshot '{sid}' of deleted sandbox '{vm}'; it can still be restored, so it is removed only if you include residue.")),
                None => d.opt_in(OptInClass::Residue, format!("Snapshot directory '{sid}' of no sandbox Celesto lists; removed only if you include residue.")),
            };
            self.add(ctx, d);
        }
    }

    /// `browser-sessions/<sid>/` and `macos-vms/<id>/`: kept while their sandbox exists, runs or
    /// a process uses them; otherwise residue.
    fn sessions_and_macos_vms(&self, ctx: &mut Ctx<'_>) {
        for (sub, kind, what) in [
            (
                "browser-sessions",
                FindingKind::CelestoBrowserSessionResidue,
                "Browser-session artifacts",
            ),
            (
                "macos-vms",
                FindingKind::CelestoMacosVmResidue,
                "macOS VM bundle",
            ),
        ] {
            let base = self.dir.join(sub);
            for e in fsread::read_dir_or_empty(&base) {
                let id = e.name_str().unwrap_or_default().to_string();
                let d = Draft::new(P, kind, &e.path).owner(id.as_str()).root(&base);
                let d = if self.live.contains(&id)
                    || self.running(&id)
                    || !ctx.procs.users_below(&e.path).is_empty()
                {
                    d.verdict(
                        Verdict::Protected,
                        format!("{what} of '{id}', which exists."),
                    )
                } else {
                    d.opt_in(OptInClass::Residue, format!("{what} of '{id}', which no longer exists; removed only if you include residue."))
                };
                self.add(ctx, d);
            }
        }
    }
}

/// What belongs to sandbox `id` outside a data directory (port-forward state, `/tmp` sockets
/// and launcher configs), judged against every data directory: kept while the sandbox exists or
/// runs, unknown when no data directory can confirm it is gone, otherwise reclaimable, and then
/// re-checked at deletion against every inventory the scan read (B21).
fn sandbox_residue(
    d: Draft,
    id: &str,
    what: &str,
    in_use: bool,
    live_all: &HashSet<String>,
    know: &CelestoKnowledge,
    all_ok: bool,
) -> Draft {
    let d = d.owner(id);
    if in_use || live_all.contains(id) {
        return d.verdict(
            Verdict::Protected,
            format!("{what} of sandbox '{id}', which exists or is running."),
        );
    }
    if know.data_dirs.is_empty() {
        return d.verdict(Verdict::Unknown, format!("{what} of sandbox '{id}', but no Celesto data directory was found to confirm the sandbox is gone."));
    }
    let inventories: Vec<PathBuf> = know
        .data_dirs
        .iter()
        .flat_map(|c| crate::upstream::inventory_paths(P, &c.dir))
        .collect();
    gate(
        d.verdict(
            Verdict::Reclaimable,
            format!(
                "{what} of sandbox '{id}', which no longer exists; Celesto never removes it (B21)."
            ),
        )
        .recheck(&inventories, OwnerRecord::SandboxId(id.to_string())),
        all_ok,
        "an inventory could not be read",
    )
}

fn scan_socket_dir(
    ctx: &mut Ctx<'_>,
    sock_dir: &Path,
    live_all: &HashSet<String>,
    vmm_ids: &HashMap<String, Vec<u32>>,
    know: &CelestoKnowledge,
    all_ok: bool,
) {
    use std::os::unix::fs::MetadataExt;
    for e in fsread::read_dir_or_empty(sock_dir) {
        let Some(name) = e.name_str() else { continue };
        let parsed = if let Some(r) = name
            .strip_prefix("libkrun-")
            .and_then(|r| r.strip_suffix(".json"))
        {
            // libkrun-<id>-<32hex>.json
            r.rsplit_once('-')
                .filter(|(_, h)| h.len() == 32 && h.bytes().all(|c| c.is_ascii_hexdigit()))
                .map(|(id, _)| {
                    (
                        id.to_string(),
                        FindingKind::CelestoLibkrunConfig,
                        "Launcher config (libkrun)",
                    )
                })
        } else {
            ["fc-", "qmp-", "vsock-"].iter().find_map(|pre| {
                name.strip_prefix(pre)
                    .and_then(|r| r.strip_suffix(".sock"))
                    .map(|id| (id.to_string(), FindingKind::CelestoSocketResidue, "Socket"))
            })
        };
        let Some((id, kind, what)) = parsed else {
            continue;
        };
        if !valid_sandbox_id(&id)
            || e.meta.uid() != ctx.opts.env.euid
            || e.is_dir()
            || e.is_symlink()
        {
            continue; // not ours to judge
        }
        let in_use =
            vmm_ids.contains_key(&id) || !ctx.procs.users_of(&e.path, Some(&e.meta)).is_empty();
        let d = Draft::new(P, kind, &e.path).root(sock_dir);
        ctx.add(sandbox_residue(
            d, &id, what, in_use, live_all, know, all_ok,
        ));
    }
}

/// An inventory or its side file that is not a regular file (a named pipe, a socket, a device,
/// a directory) is a finding of its own: unknown, never read, never deleted.
fn odd_inventory_files(ctx: &mut Ctx<'_>, dir: &Path, dbs: &[PathBuf]) {
    for db in dbs {
        for suffix in ["", "-wal", "-journal"] {
            let p = crate::inventory::sqlite_ro::side(db, suffix);
            let Some(m) = fsread::lstat(&p) else { continue };
            let ft = m.file_type();
            if ft.is_file() || ft.is_symlink() {
                continue;
            }
            ctx.add(
                Draft::new(P, FindingKind::CelestoOddFile, &p)
                    .root(dir)
                    .verdict(
                        Verdict::Unknown,
                        format!(
                            "{} where Celesto stores its list of sandboxes; never read and never deleted.",
                            capitalized(fsread::type_name(ft))
                        ),
                    ),
            );
        }
    }
}

/// `a named pipe` → `A named pipe`.
pub(crate) fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// `$TMPDIR/latest.ipsw`, where Celesto downloads a macOS restore image first: this user's is
/// an opt-in cache.
pub(crate) fn scan_tmp_restore_image(ctx: &mut Ctx<'_>) {
    use std::os::unix::fs::MetadataExt;
    let Some(tmp) = ctx
        .opts
        .env
        .var("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    else {
        return; // macOS gives every user a TMPDIR; a shared /tmp is not looked at
    };
    let p = tmp.join("latest.ipsw");
    if fsread::lstat(&p).is_some_and(|m| m.is_file() && m.uid() == ctx.opts.env.euid) {
        ctx.add(
            Draft::new(P, FindingKind::CelestoRestoreImage, &p)
                .root(&tmp)
                .opt_in(OptInClass::Caches, "macOS restore image (IPSW) Celesto downloaded to the temporary directory; several GB, downloaded again when needed."),
        );
    }
}

/// Image-build staging dirs (`<images>/<name>/.build-<8 hex>/`) a killed build left, and macOS
/// restore images (`<images>/macos/.downloads/*.ipsw`), several GB each.
fn build_staging_and_restore_images(ctx: &mut Ctx<'_>, dir: &Path) {
    let hex8 = |n: &str| n.len() == 8 && n.bytes().all(|b| b.is_ascii_hexdigit());
    for image in fsread::read_dir_or_empty(dir).iter().filter(|e| e.is_dir()) {
        for e in fsread::read_dir_or_empty(&image.path) {
            let Some(tag) = e.name_str().and_then(|n| n.strip_prefix(".build-")) else {
                continue;
            };
            if !hex8(tag) || !e.is_dir() {
                continue;
            }
            let newest = fsread::newest_mtime(&e.path).unwrap_or(i128::MAX);
            let age = ctx
                .now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0)
                - newest;
            let d = Draft::new(P, FindingKind::CelestoBuildStaging, &e.path).root(&image.path);
            let d = if age < ctx.opts.age_guard.as_nanos() as i128 {
                d.verdict(Verdict::Protected, "Staging folder of an image build that changed moments ago: the build may be running.")
            } else {
                d.verdict(Verdict::Reclaimable, format!(
                    "Staging folder of an image build that was killed (Celesto removes it only when the build ends normally). A loop mount still at {} stays: it is never walked into; `sudo umount` it to reclaim all of it.",
                    e.path.join("mnt").display()
                ))
            };
            ctx.add(d);
        }
    }
    let downloads = dir.join("macos").join(".downloads");
    for e in fsread::read_dir_or_empty(&downloads) {
        if e.is_file() && e.name_str().is_some_and(|n| n.ends_with(".ipsw")) {
            ctx.add(
                Draft::new(P, FindingKind::CelestoRestoreImage, &e.path)
                    .root(&downloads)
                    .opt_in(OptInClass::Caches, "macOS restore image (IPSW) Celesto downloaded; several GB, downloaded again when a macOS sandbox is made."),
            );
        }
    }
}

fn scan_image_dir(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    installed: &[(String, Version)],
    depends: &[(PathBuf, String)],
    dists: &[&str],
) {
    let who = if dists.is_empty() {
        "Celesto".to_string()
    } else {
        dists.join(" or ")
    };
    let newest = installed.iter().map(|(_, v)| v).max();
    let real_dir = canon(dir);
    build_staging_and_restore_images(ctx, dir);
    for e in fsread::read_dir_or_empty(dir) {
        let Some(name) = e.name_str() else { continue };
        let Some(ver) = cache_version(name) else {
            continue; // s3/, custom/, macos/ and unversioned names: never touched
        };
        let link = e.is_symlink();
        if !(e.is_dir() || link) {
            ctx.add(Draft::new(P, FindingKind::CelestoUnrecognised, &e.path).root(dir).verdict(
                Verdict::Unknown,
                "A plain file named like an image cache; not something Celesto creates, left alone.",
            ));
            continue;
        }
        // Lexical: sandboxes record absolute, resolved paths; a symlinked entry is never
        // resolved (removing a link cannot break what its target holds).
        let real_entry = real_dir.join(&e.name);
        let users: Vec<&str> = depends
            .iter()
            .filter(|(p, _)| p.starts_with(&real_entry) || p.starts_with(&e.path))
            .map(|(_, id)| id.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let kind = if link {
            FindingKind::CelestoImageCacheLink
        } else {
            FindingKind::CelestoImageCache
        };
        let d = Draft::new(P, kind, &e.path).root(dir);
        let parsed = Version::parse(ver);
        let d = if !users.is_empty() {
            Draft { kind: FindingKind::CelestoImageCacheInUse, ..d }.verdict(
                Verdict::Protected,
                format!("Image cache v{ver} that sandbox {} backs onto or boots from; deleting it would break them (Celesto B1).", users.iter().map(|u| format!("'{u}'")).collect::<Vec<_>>().join(", ")),
            )
        } else if installed
            .iter()
            .any(|(s, v)| s == ver || Some(v) == parsed.as_ref())
        {
            Draft {
                kind: FindingKind::CelestoImageCacheCurrent,
                ..d
            }
            .verdict(
                Verdict::Protected,
                format!("Image cache of the installed version {ver}."),
            )
        } else if let (Some(newest), Some(v)) = (newest, parsed.as_ref()) {
            if v > newest {
                Draft { kind: FindingKind::CelestoImageCacheNewer, ..d }.verdict(
                    Verdict::Protected,
                    format!("Image cache of v{ver}, newer than the installed version; Celesto's own clean-up would delete it, Smolsweep leaves it alone."),
                )
            } else if link {
                d.verdict(Verdict::Reclaimable, format!("Link to an image cache of old version {ver}; only the link is removed, its target stays (Celesto's own clean-up counts the target's bytes: B12)."))
            } else {
                Draft {
                    kind: FindingKind::CelestoImageCacheStale,
                    ..d
                }
                .verdict(
                    Verdict::Reclaimable,
                    format!(
                        "Image cache of old version {ver}; no sandbox backs onto or boots from it."
                    ),
                )
            }
        } else if parsed.is_none() {
            d.verdict(
                Verdict::Unknown,
                format!("Image cache with a version '{ver}' Smolsweep cannot order; left alone."),
            )
        } else {
            Draft { kind: FindingKind::CelestoImageCacheStale, ..d }.opt_in(
                OptInClass::Caches,
                format!("Image cache of v{ver}; {who} is not installed here, so no version is current, and no sandbox uses it."),
            )
        };
        ctx.add(d);
    }
}

pub(crate) fn pid_list(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `disks/<disk>.retained` marks its disk as saved, judged as upstream does
/// (`Path.exists()`): a regular file or a link that resolves to something saves the disk; a
/// dangling link does not. Resolving a link is the one thing a scan does that the kernel may
/// record as a read: the link's own access time (never its target's, never a byte).
fn marker_saves(marker: &Path) -> bool {
    match fsread::lstat(marker) {
        Some(m) if m.file_type().is_symlink() => std::fs::metadata(marker).is_ok(),
        Some(m) => m.is_file(),
        None => false,
    }
}
