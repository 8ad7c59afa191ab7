//! smol-machines smolvm: machines, machine directories, lock files and caches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::fsread;
use crate::inventory::smolvm::{vm_dir_hash, SmolvmRecord, SmolvmReservation};
use crate::model::{
    FindingKind, Machine, OptInClass, OwnerRecord, Product, ProductReport, Verdict,
};
use crate::roots::{smolvm_roots, SmolvmRootSet};

use super::ctx::pid_list;
use super::ctx::{Ctx, Draft};
use crate::root_kind::RootKind;

mod caches;
mod stores;

pub(crate) use caches::scan_tmp_trees;

const P: Product = Product::Smolvm;

/// One root set as the scan understood it.
#[derive(Debug, Default)]
pub(crate) struct SmolSet {
    pub vms_dirs: Vec<PathBuf>,
    pub names: HashSet<String>,
    pub hash_to_name: HashMap<String, String>,
    pub ok: bool,
}

/// What the smolvm part of the scan learnt, for process attribution.
#[derive(Debug, Default)]
pub(crate) struct SmolvmKnowledge {
    pub sets: Vec<SmolSet>,
    pub all_roots: Vec<PathBuf>,
    /// `SMOLVM_DATA_DIR`-style replacement homes of the sets.
    pub data_dirs: Vec<PathBuf>,
    pub recorded_pids: HashSet<u32>,
    pub pid_names: HashMap<u32, String>,
    /// Machine directories a `_boot-vm` boots from although their record does not own it: the
    /// record has no live process and no smolvm command holds `vm.lock` to start it (the
    /// manager of an interrupted `machine start` is gone, its VM lives on).
    pub unclaimed_vm_dirs: HashSet<PathBuf>,
    pub all_ok: bool,
}

impl SmolvmKnowledge {
    /// The set whose `vms/` holds `vm_dir`, and the machine name (from the record hash, or the
    /// directory's `name` file).
    pub(crate) fn locate_vm_dir(&self, vm_dir: &Path) -> Option<(&SmolSet, Option<String>)> {
        let parent = vm_dir.parent()?;
        let set = self
            .sets
            .iter()
            .find(|s| s.vms_dirs.iter().any(|v| v == parent))?;
        let hash = vm_dir.file_name()?.to_str()?;
        let name = set
            .hash_to_name
            .get(hash)
            .cloned()
            .or_else(|| read_name_file(vm_dir));
        Some((set, name))
    }
    pub(crate) fn name_for_pid(&self, pid: u32) -> Option<String> {
        self.pid_names.get(&pid).cloned()
    }
}

fn read_name_file(dir: &Path) -> Option<String> {
    let b = fsread::read_small(&dir.join("name"), 256).ok()?;
    let s = String::from_utf8(b).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Whether `<dir>/vm.lock` is locked right now (the system lock table, not its holders' fds).
fn vm_lock_held(ctx: &Ctx<'_>, dir: &Path) -> bool {
    let lock = dir.join("vm.lock");
    fsread::lstat(&lock).is_some_and(|m| ctx.locks.is_held(&lock, m.dev(), m.ino()))
}

fn is_hash16(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

fn ago(ctx: &Ctx<'_>, mtime_ns: i128) -> Duration {
    let now = ctx
        .now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Duration::from_nanos((now - mtime_ns).max(0) as u64)
}

pub(crate) fn scan(ctx: &mut Ctx<'_>) -> SmolvmKnowledge {
    let roots = smolvm_roots(ctx.opts.platform, &ctx.opts.env);
    let mut know = SmolvmKnowledge {
        all_ok: true,
        ..Default::default()
    };
    let mut problems = Vec::new();
    let mut report_roots = BTreeMap::new();
    let mut detected = false;
    let mut seen = HashSet::new();
    let mut version = None;
    for (n, set) in roots.sets.iter().enumerate() {
        if !seen.insert(set.cache_root.clone()) {
            continue;
        }
        let exists = [
            &set.data_root,
            &set.cache_root,
            &set.pack_cache,
            &set.libs_cache,
        ]
        .iter()
        .any(|p| p.is_dir());
        for p in [
            &set.data_root,
            &set.cache_root,
            &set.pack_cache,
            &set.libs_cache,
            &set.registry_cache,
            &set.image_archives,
        ] {
            know.all_roots.push(p.clone());
        }
        know.all_roots.extend(set.vms_dirs.iter().cloned());
        if set.source.contains("SMOLVM_DATA_DIR") {
            if let Some(d) = ctx.opts.env.var("SMOLVM_DATA_DIR") {
                know.data_dirs.push(PathBuf::from(d));
            }
        }
        if !exists {
            know.sets.push(SmolSet {
                vms_dirs: set.vms_dirs.clone(),
                ok: true,
                ..Default::default()
            });
            continue;
        }
        detected = true;
        let sfx = if n == 0 {
            String::new()
        } else {
            format!("_{}", n + 1)
        };
        for (k, v) in set.named_roots() {
            report_roots.insert(format!("{k}{sfx}"), v.clone());
        }
        for (i, v) in set.vms_dirs.iter().enumerate() {
            if v.is_dir() || i == 0 {
                report_roots.insert(format!("{}{sfx}", RootKind::VmsDir.key(i)), v.clone());
            }
        }
        let s = scan_set(ctx, set, &mut problems, &mut know);
        know.all_ok &= s.ok;
        know.sets.push(s);
    }
    if version.is_none() {
        version = ctx
            .installs
            .iter()
            .find(|i| i.product == Product::Smolvm)
            .and_then(|i| i.version.clone());
    }
    let installed = ctx.installs.iter().any(|i| i.product == Product::Smolvm);
    ctx.products.push(ProductReport {
        product: P,
        detected: detected || installed,
        status: if know.all_ok { "ok" } else { "unknown" }.into(),
        roots: report_roots,
        problems,
        version,
        newer: None,
    });
    know
}

/// What the judges of one root set share.
struct SetScan<'s> {
    set: &'s SmolvmRootSet,
    out: SmolSet,
    /// Why the machine database could not be read (empty while `out.ok`).
    problem: String,
    records: Vec<SmolvmRecord>,
    /// Live create reservations by directory hash: the machine's name and the owner's pid.
    reserved: HashMap<String, (String, Option<i64>)>,
    /// smolvm VM processes that may be using the set's caches right now.
    busy: Vec<u32>,
    /// Every machine directory's lease on a shared extraction (`.pack-shared`).
    leases: Vec<stores::Lease>,
}

fn scan_set(
    ctx: &mut Ctx<'_>,
    set: &SmolvmRootSet,
    problems: &mut Vec<String>,
    know: &mut SmolvmKnowledge,
) -> SmolSet {
    flag_odd_db_files(ctx, set);
    let mut s = SetScan::read(ctx, set);
    if !s.out.ok {
        problems.push(s.problem.clone());
    }
    let running_pids: Vec<u32> = s
        .records
        .iter()
        .filter_map(|r| record_machine(ctx, set, r, know))
        .collect();
    s.busy = busy_pids(ctx, set, running_pids);
    s.leases = stores::read_leases(set);
    for vms in &set.vms_dirs {
        for e in fsread::read_dir_or_empty(vms) {
            s.judge_vms_entry(ctx, vms, &e);
        }
    }
    s.declare_leases(ctx);
    s.judge_data_root(ctx);
    s.judge_cache_root(ctx);
    s.judge_pack_cache(ctx);
    s.judge_libs_cache(ctx);
    s.judge_download_caches(ctx);
    s.out
}

/// Something other than a file or a symlink where the machine database (or its WAL, SHM) lives.
fn flag_odd_db_files(ctx: &mut Ctx<'_>, set: &SmolvmRootSet) {
    for p in crate::upstream::db_files(&set.db_path) {
        let Some(m) = fsread::lstat(&p) else { continue };
        if m.file_type().is_file() || m.file_type().is_symlink() {
            continue;
        }
        if let Some(dir) = p.parent() {
            ctx.add(
                Draft::new(P, FindingKind::SmolvmOddFile, &p)
                    .root(dir)
                    .verdict(
                        Verdict::Unknown,
                        format!(
                    "{} where smolvm keeps its machine database; never read and never deleted.",
                    super::ctx::capitalized(fsread::type_name(m.file_type()))
                ),
                    ),
            );
        }
    }
}

/// The set's records and create reservations, or why they cannot be known: the database is
/// unreadable, or machine directories exist without one.
fn read_set_inventory(
    ctx: &Ctx<'_>,
    set: &SmolvmRootSet,
) -> Result<(Vec<SmolvmRecord>, Vec<SmolvmReservation>), String> {
    if fsread::lstat(&set.db_path).is_some() {
        return ctx
            .read_inventory(
                &set.db_path,
                crate::inventory::smolvm::read_smolvm_inventory,
                crate::inventory::cache::smolvm,
            )
            .map(|inv| (inv.records, inv.reservations))
            .map_err(|e| e.to_string());
    }
    let has_dirs = set.vms_dirs.iter().any(|v| {
        fsread::read_dir_or_empty(v)
            .iter()
            .any(|e| e.name_str().is_some_and(is_hash16))
    });
    if has_dirs {
        return Err(format!(
            "machine directories exist but there is no machine database at {}",
            set.db_path.display()
        ));
    }
    Ok((Vec::new(), Vec::new()))
}

/// Machines being created right now (`vm_create_reservations`), by directory hash: their
/// directory may exist before their record does (upstream's own reclaim does not check this:
/// hazard 4). A reservation whose owner process is gone is stale.
fn live_reservations(
    ctx: &Ctx<'_>,
    reservations: &[SmolvmReservation],
) -> HashMap<String, (String, Option<i64>)> {
    reservations
        .iter()
        .filter(|r| {
            r.owner_pid
                .and_then(|p| u32::try_from(p).ok())
                .is_none_or(|p| ctx.procs.by_pid(p).is_some())
        })
        .map(|r| (vm_dir_hash(&r.name), (r.name.clone(), r.owner_pid)))
        .collect()
}

/// Push the record's machine (with liveness: pid and start time must both match); its pid
/// when it runs.
fn record_machine(
    ctx: &mut Ctx<'_>,
    set: &SmolvmRootSet,
    r: &SmolvmRecord,
    know: &mut SmolvmKnowledge,
) -> Option<u32> {
    let alive = r
        .pid
        .is_some_and(|pid| ctx.procs.alive_as_recorded(pid, r.pid_start_time));
    let running = r.pid.filter(|_| alive);
    if let Some(pid) = running {
        know.recorded_pids.insert(pid);
        know.pid_names.insert(pid, r.name.clone());
    }
    let hash = vm_dir_hash(&r.name);
    let dir = set
        .vms_dirs
        .iter()
        .map(|v| v.join(&hash))
        .find(|d| d.is_dir());
    let effective = effective_state(ctx, r, alive, dir.as_deref(), &mut know.unclaimed_vm_dirs);
    ctx.machines.push(Machine {
        pid: r.pid,
        alive,
        effective_state: effective,
        pid_start_time: r.pid_start_time,
        ephemeral: r.ephemeral,
        created_at: r.created_at,
        dir,
        db: Some(set.db_path.clone()),
        branched_from: r.golden.clone(),
        ..Machine::new(P, r.name.clone(), r.state.clone())
    });
    running
}

/// The state to show for a record: the recorded one, unless its process says otherwise. A
/// directory a VM boots from that the record does not own goes into `unclaimed`.
fn effective_state(
    ctx: &Ctx<'_>,
    r: &SmolvmRecord,
    alive: bool,
    dir: Option<&Path>,
    unclaimed: &mut HashSet<PathBuf>,
) -> String {
    let booting = dir.is_some_and(|d| {
        ctx.procs
            .smolvm_vmms_in(d.parent().unwrap_or(d))
            .any(|(_, vd)| vd == d)
    });
    match r.state.as_str() {
        // A paused machine has no process by design (its execution is saved to disk).
        "running" | "unreachable" | "pausing" if !alive => {
            if r.pid.is_some() {
                format!("stale: recorded {}, process gone", r.state)
            } else {
                format!("stale: recorded {} without a process", r.state)
            }
        }
        "paused" | "pausing" => r.state.clone(),
        _ if booting && !alive && !dir.is_some_and(|d| vm_lock_held(ctx, d)) => {
            unclaimed.extend(dir.map(Path::to_path_buf));
            format!(
                "{}; a VM is running from its directory, but this machine's record does not own it",
                r.state
            )
        }
        "created" if booting => "booting".to_string(),
        s => s.to_string(),
    }
}

/// The VM processes that may be using the set's machine directories or caches.
fn busy_pids(ctx: &Ctx<'_>, set: &SmolvmRootSet, mut busy: Vec<u32>) -> Vec<u32> {
    for v in &set.vms_dirs {
        busy.extend(ctx.procs.smolvm_vmms_in(v).map(|(p, _)| p.pid));
    }
    busy.extend(ctx.procs.users_below(&set.cache_root));
    busy.sort_unstable();
    busy.dedup();
    busy
}

impl<'s> SetScan<'s> {
    /// Read the set's machine database; the set is not ok when that fails.
    fn read(ctx: &Ctx<'_>, set: &'s SmolvmRootSet) -> Self {
        let mut out = SmolSet {
            vms_dirs: set.vms_dirs.clone(),
            ok: true,
            ..Default::default()
        };
        let (records, reservations, problem) = match read_set_inventory(ctx, set) {
            Ok((records, reservations)) => (records, reservations, String::new()),
            Err(problem) => {
                out.ok = false;
                (Vec::new(), Vec::new(), problem)
            }
        };
        for r in &records {
            out.names.insert(r.name.clone());
            out.hash_to_name
                .insert(vm_dir_hash(&r.name), r.name.clone());
        }
        SetScan {
            set,
            out,
            problem,
            reserved: live_reservations(ctx, &reservations),
            records,
            busy: Vec::new(),
            leases: Vec::new(),
        }
    }

    /// While the machine database is unreadable nothing is reclaimable or opt-in.
    fn gate(&self, d: Draft) -> Draft {
        if self.out.ok || !matches!(d.verdict, Verdict::Reclaimable | Verdict::OptIn) {
            return d;
        }
        let reason = format!(
            "{} But {}, so Smolsweep cannot verify it and leaves it alone.",
            d.reason, self.problem
        );
        let mut d = d.verdict(Verdict::Unknown, reason);
        d.opt_in_class = None;
        d
    }

    fn busy_reason(&self, what: &str) -> String {
        format!(
            "{what}; a smolvm VM is running (process {}), so it may be in use right now.",
            pid_list(&self.busy)
        )
    }

    /// A cache: opt-in (`what`) while no smolvm VM runs, protected (`busy_what`) while one does.
    fn cache(&self, d: Draft, what: &str, busy_what: &str) -> Draft {
        if self.busy.is_empty() {
            d.opt_in(OptInClass::Caches, what)
        } else {
            d.verdict(Verdict::Protected, self.busy_reason(busy_what))
        }
    }

    /// Judge a cache directory beside the machine directories and add it, gated.
    fn add_cache(&self, ctx: &mut Ctx<'_>, d: Draft, what: &str, busy_what: &str) {
        ctx.add(self.gate(self.cache(d, what, busy_what)));
    }

    /// One entry of a `vms/` directory, judged by what the layout table says it is.
    fn judge_vms_entry(&self, ctx: &mut Ctx<'_>, vms: &Path, e: &fsread::Entry) {
        use crate::layout::{Is, Place, Sub};
        let Some(name) = e.name_str().map(str::to_string) else {
            return;
        };
        let d = Draft::new(P, FindingKind::SmolvmUnrecognised, &e.path).root(vms);
        let dir = |kind| Draft::new(P, kind, &e.path).root(vms);
        let Some(row) = crate::layout::row(Place::Root(RootKind::VmsDir), &name) else {
            return ctx.add(d.verdict(
                Verdict::Unknown,
                "Not a machine directory name smolvm uses; left alone.",
            ));
        };
        match (row.is, row.kinds().first()) {
            (Is::Never(_), _) => {}
            (Is::Holds(Place::In(Sub::SmolvmShared)), _) => self.judge_shared(ctx, e),
            (Is::Holds(Place::In(Sub::SmolvmCowBases)), _) => self.judge_cow_bases(ctx, e),
            (Is::FoundHolding(_, Sub::SmolvmMachine), _) if e.is_dir() => {
                self.judge_machine_dir(ctx, e, &name, d)
            }
            (_, Some(FindingKind::SmolvmRestoreCache)) => self.add_cache(
                ctx,
                dir(FindingKind::SmolvmRestoreCache),
                "Clones of recently restored checkpoints, guest memory included; survives every smolvm command and is only a speed-up.",
                "Restore cache holding guest memory",
            ),
            (_, Some(FindingKind::SmolvmCheckpointUnpack)) => {
                if !fsread::read_dir_or_empty(&e.path).is_empty() {
                    self.add_cache(
                        ctx,
                        dir(FindingKind::SmolvmCheckpointUnpack),
                        "Scratch space of an interrupted checkpoint unpack.",
                        "Checkpoint unpack scratch space",
                    );
                }
            }
            (_, Some(FindingKind::SmolvmPauseRecord)) => self.judge_pause_record(ctx, vms, e),
            (_, Some(FindingKind::SmolvmForkLock)) => {
                self.judge_fork_lock(ctx, e, d, name.strip_prefix('.').unwrap_or(&name))
            }
            _ => ctx.add(d.verdict(
                Verdict::Unknown,
                format!(
                    "Named like {}, but is {}; left alone.",
                    row.what,
                    fsread::type_name(e.meta.file_type())
                ),
            )),
        }
    }

    /// `.<name>.fork-operation.lock`, `.<name>.fork-operation.pause-operation.lock`; other
    /// dot files are bookkeeping and not listed.
    fn judge_fork_lock(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry, d: Draft, rest: &str) {
        let m = rest
            .strip_suffix(".fork-operation.pause-operation.lock")
            .or_else(|| rest.strip_suffix(".fork-operation.lock"));
        let Some(mname) = m else { return };
        let d = Draft {
            kind: FindingKind::SmolvmForkLock,
            ..d
        }
        .owner(mname)
        .recheck(
            std::slice::from_ref(&self.set.db_path),
            OwnerRecord::MachineName(mname.to_string()),
        );
        let d = if !e.is_file() {
            d.verdict(
                Verdict::Unknown,
                "Named like a lock file but is not a regular file; left alone.",
            )
        } else if !ctx.locks.readable() {
            d.verdict(Verdict::Unknown, "Lock file; the system lock table is not readable here, so Smolsweep cannot tell whether it is held.")
        } else if ctx.locks.is_held(&e.path, e.meta.dev(), e.meta.ino()) {
            d.verdict(
                Verdict::Protected,
                "Lock file held by a running smolvm process right now.",
            )
        } else if self.out.names.contains(mname) {
            d.verdict(
                Verdict::Protected,
                format!("Lock of a fork or pause of machine '{mname}', which exists."),
            )
        } else {
            d.verdict(Verdict::Reclaimable, format!("Lock file of '{mname}' that no process holds, and no machine has that name; smolvm leaves these behind, even for names that never existed."))
        };
        ctx.add(self.gate(d));
    }

    /// A directory named like a machine's (`vms/<hash16>`): of a record, of a reservation, or
    /// of nobody.
    fn judge_machine_dir(&self, ctx: &mut Ctx<'_>, e: &fsread::Entry, hash: &str, d: Draft) {
        if let Some(mname) = self.out.hash_to_name.get(hash) {
            let d = self.recorded_dir(ctx, e, mname, d);
            ctx.add(self.gate(d));
            self.set_machine_bytes(ctx, mname, &e.path);
        } else if let Some((rname, owner_pid)) = self.reserved.get(hash) {
            ctx.add(self.gate(reserved_dir(d, rname, *owner_pid)));
        } else {
            let d = self.unrecorded_dir(ctx, e, hash, d);
            ctx.add(self.gate(d));
        }
    }

    /// The directory of a recorded machine: protected, unless the machine is a dead ephemeral
    /// one or a helper whose maker is gone.
    fn recorded_dir(&self, ctx: &Ctx<'_>, e: &fsread::Entry, mname: &str, d: Draft) -> Draft {
        let rec = self.records.iter().find(|r| r.name == mname);
        let state = rec.map(|r| r.state.clone()).unwrap_or_default();
        let unused = || ctx.procs.users_below(&e.path).is_empty();
        let dead_ephemeral = rec.is_some_and(|r| {
            r.ephemeral
                && r.pid
                    .is_some_and(|pid| !ctx.procs.alive_as_recorded(pid, r.pid_start_time))
        }) && unused();
        let helper_gone = crate::upstream::helper_creator(mname)
            .is_some_and(|pid| ctx.procs.by_pid(pid).is_none())
            && matches!(state.as_str(), "created" | "stopped")
            && unused();
        if helper_gone {
            // Deleted through `machine delete --force`, like a dead ephemeral one.
            Draft { kind: FindingKind::SmolvmHelperMachineDir, ..d }.owner(mname).verdict(
                Verdict::Reclaimable,
                format!("Helper machine '{mname}' ({state}) left by an interrupted image build or init bake; the process that made it is gone."),
            )
        } else if dead_ephemeral {
            // Reclaimed through `machine delete --force`, which removes the record with the
            // directory.
            Draft { kind: FindingKind::SmolvmDeadEphemeralDir, ..d }.owner(mname).verdict(
                Verdict::Reclaimable,
                format!("Ephemeral machine '{mname}' whose VM process is gone; smolvm's own next command would delete it, Smolsweep does it through `machine delete`."),
            )
        } else {
            Draft {
                kind: FindingKind::SmolvmMachineDir,
                ..d
            }
            .owner(mname)
            .verdict(
                Verdict::Protected,
                format!(
                    "Directory of machine '{mname}' ({state}); delete the machine to reclaim it."
                ),
            )
        }
    }

    /// The machine's size is its directory's finding's.
    fn set_machine_bytes(&self, ctx: &mut Ctx<'_>, mname: &str, dir: &Path) {
        let Some(bytes) = ctx
            .findings
            .iter()
            .find(|f| f.path == dir)
            .map(|f| f.allocated_bytes)
        else {
            return;
        };
        let db = self.set.db_path.as_path();
        if let Some(m) = ctx
            .machines
            .iter_mut()
            .find(|m| m.name == mname && m.db.as_deref() == Some(db))
        {
            m.allocated_bytes = bytes;
        }
    }

    /// A machine directory with neither a record nor a reservation.
    fn unrecorded_dir(&self, ctx: &Ctx<'_>, e: &fsread::Entry, hash: &str, d: Draft) -> Draft {
        let owner = read_name_file(&e.path);
        let users = ctx.procs.users_below(&e.path);
        let age = ago(ctx, fsread::newest_mtime(&e.path).unwrap_or(i128::MAX));
        let entries = fsread::read_dir_or_empty(&e.path);
        let only_name = entries.len() == 1 && entries[0].name_str() == Some("name");
        let label = owner
            .as_ref()
            .map(|o| format!("'{o}'"))
            .unwrap_or_else(|| "an unknown machine".into());
        let d = d.owner_opt(owner.clone()).recheck(
            std::slice::from_ref(&self.set.db_path),
            OwnerRecord::MachineDirHash(hash.to_string()),
        );
        let (kind, verdict, reason) = if !users.is_empty() {
            (FindingKind::SmolvmReferencedDir, Verdict::Protected,
             format!("Machine directory of {label} with no record, but process {} still uses it; end that VM first (`smolsweep reap`).", pid_list(&users)))
        } else if vm_lock_held(ctx, &e.path) {
            // Whoever holds it (a CLI, serve) may be another user's process, whose open files
            // this scan cannot see.
            (FindingKind::SmolvmReferencedDir, Verdict::Protected,
             format!("Machine directory of {label} with no record, but its lock file vm.lock is held right now: a smolvm command (or `smolvm serve`) is working on it."))
        } else if age < ctx.opts.age_guard {
            (FindingKind::SmolvmYoungDir, Verdict::Protected,
             format!("Machine directory of {label} with no record, changed {} s ago; a machine may be being created right now.", age.as_secs()))
        } else if entries.is_empty() {
            (FindingKind::SmolvmEmptyDir, Verdict::Reclaimable,
             "Empty machine directory with no record, so no machine uses it (smolvm leaves one when you stop or ask the status of a name that does not exist).".to_string())
        } else if only_name {
            (
                FindingKind::SmolvmNameOnlyDir,
                Verdict::Reclaimable,
                format!("This machine directory of {label} holds only its name and has no record, so no machine uses it."),
            )
        } else {
            (FindingKind::SmolvmDanglingDir, Verdict::Reclaimable,
             format!("Machine directory of {label} with no record and no process using it (a failed or interrupted `machine run` leaves these)."))
        };
        Draft { kind, ..d }.verdict(verdict, reason)
    }
}

/// A machine directory whose machine is being created right now.
fn reserved_dir(d: Draft, rname: &str, owner_pid: Option<i64>) -> Draft {
    let by = owner_pid
        .map(|p| format!(" held by process {p}"))
        .unwrap_or_default();
    Draft {
        kind: FindingKind::SmolvmReservedDir,
        ..d
    }
    .owner(rname)
    .verdict(
        Verdict::Protected,
        format!("Machine directory of '{rname}', which is being created right now (a create reservation{by}); left alone."),
    )
}
