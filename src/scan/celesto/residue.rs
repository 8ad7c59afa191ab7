//! What a Celesto sandbox leaves outside its disks: residue files, its socket directory, and
//! inventory files that are not databases.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::fsread::{self, Entry};
use crate::inventory::celesto::{valid_sandbox_id, CelestoInventory};
use crate::model::{FindingKind, OptInClass, OwnerRecord, Verdict};

use crate::scan::ctx::{capitalized, Ctx, Draft};

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn scan_residue(
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
pub(super) struct Residue<'a> {
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
        let held = ctx.locks.is_held(&e.path, e.meta.dev(), e.meta.ino());
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
pub(super) fn sandbox_residue(
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

pub(super) fn scan_socket_dir(
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
        if name.starts_with("krun-gvproxy-") {
            gvproxy_socket(ctx, sock_dir, &e, vmm_ids);
            continue;
        }
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
pub(super) fn odd_inventory_files(ctx: &mut Ctx<'_>, dir: &Path, dbs: &[PathBuf]) {
    for db in dbs {
        for p in crate::upstream::db_files(db) {
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

/// `krun-gvproxy-<8 hex>.sock` (macOS): the network socket of a libkrun sandbox's gvproxy,
/// unlinked when the launcher exits normally. This user's socket is left over while no Celesto
/// VM runs (the name says nothing of which sandbox's it was).
fn gvproxy_socket(
    ctx: &mut Ctx<'_>,
    sock_dir: &Path,
    e: &Entry,
    vmm_ids: &HashMap<String, Vec<u32>>,
) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let shape = e
        .name_str()
        .and_then(|n| n.strip_prefix("krun-gvproxy-"))
        .and_then(|r| r.strip_suffix(".sock"))
        .is_some_and(|h| crate::layout::Name::Hex(8).matches(h));
    if !shape || e.meta.uid() != ctx.opts.env.euid || !e.meta.file_type().is_socket() {
        return; // not ours to judge
    }
    let d = Draft::new(P, FindingKind::CelestoSocketResidue, &e.path).root(sock_dir);
    let d = if vmm_ids.is_empty() {
        d.verdict(
            Verdict::Reclaimable,
            "Network socket of a libkrun sandbox's gvproxy that outlived its launcher; no Celesto VM runs.",
        )
    } else {
        d.verdict(
            Verdict::Protected,
            "Network socket of a libkrun sandbox's gvproxy; a Celesto VM is running and may use it.",
        )
    };
    ctx.add(d);
}
