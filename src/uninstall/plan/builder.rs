//! The uninstall procedure, step by step: machines, processes, mounts, keep rules, and each
//! record with its directory.

use std::path::{Path, PathBuf};

use crate::exec::reap::ProcessRef;
use crate::model::{Machine, Product};
use crate::plan::{Action, Plan, PlannedAction};

use crate::uninstall::preflight::{Preflight, StateDir};

use super::state_dirs::size_of;
use super::*;

/// Build the plan for `opts` from `pre` (pure).
pub fn build(pre: &Preflight, opts: &UninstallOptions) -> UninstallPlan {
    let mut b = Builder {
        pre,
        opts,
        products: opts.product.products(),
        home: pre.home.clone(),
        steps: Vec::new(),
        kept: Vec::new(),
        user_commands: Vec::new(),
        notes: Vec::new(),
        removed_roots: Vec::new(),
    };
    b.machine_steps();
    b.process_steps();
    b.mount_steps();
    b.state_dir_steps();
    b.runtime_file_steps();
    b.dot_celesto_steps();
    b.dot_smolvm_steps();
    b.launcher_steps();
    b.path_block_steps();
    b.keep_credentials();
    b.install_commands();
    b.keep_rules();
    b.records_stay_with_their_dirs();
    b.finish()
}

/// What [`build`] gathers, in the order of the procedure.
pub(super) struct Builder<'p> {
    pub(super) pre: &'p Preflight,
    pub(super) opts: &'p UninstallOptions,
    pub(super) products: Vec<Product>,
    pub(super) home: PathBuf,
    pub(super) steps: Vec<PlanStep>,
    pub(super) kept: Vec<Kept>,
    pub(super) user_commands: Vec<UserCommand>,
    pub(super) notes: Vec<String>,
    pub(super) removed_roots: Vec<PathBuf>,
}

impl Builder<'_> {
    pub(super) fn chosen(&self, p: Product) -> bool {
        self.products.contains(&p)
    }

    /// A ticked step doing `action`; its size is what the action is expected to free
    /// ([`Plan::estimate_of`]), so the steps add up to the plan's estimate.
    pub(super) fn push(&mut self, action: Action, summary: String, why: &str) {
        let bytes = Plan::estimate_of(&[PlannedAction::of(action.clone())]);
        self.steps.push(PlanStep {
            action,
            summary,
            why: why.to_string(),
            checked: true,
            bytes,
            kept_by: Vec::new(),
        })
    }

    /// A removal of `path` bounded by `root`, measured now.
    pub(super) fn push_remove(
        &mut self,
        product: Product,
        path: &Path,
        root: &Path,
        summary: String,
        why: &str,
    ) {
        let bytes = size_of(self.pre, path);
        self.push(
            Action::RemoveTree {
                product,
                path: path.to_path_buf(),
                root: root.to_path_buf(),
                identity: crate::size::identity(path).ok(),
                expected_bytes: bytes,
                mounts_inside: Vec::new(),
            },
            summary,
            why,
        );
    }

    pub(super) fn keep_credential(&mut self, path: &Path, what: &str) {
        self.kept.push(Kept {
            path: path.to_path_buf(),
            what: what.into(),
            how: "--remove-credentials".into(),
        });
    }

    /// Step 1: Machines through the CLI.
    pub(super) fn machine_steps(&mut self) {
        for product in self.products.clone() {
            let pre = self.pre;
            let records: Vec<_> = pre
                .machines
                .iter()
                .filter(|m| m.product == product)
                .collect();
            if records.is_empty() {
                continue;
            }
            if pre.cli(product).is_none() {
                self.notes.push(format!(
                    "No {} command was found, so its {} machine record(s) are not deleted through \
                     it; surviving VM processes are reaped and the records go with the data directory.",
                    product.display_name(),
                    records.len()
                ));
                continue;
            }
            for m in records {
                self.machine_record_steps(m);
            }
        }
    }

    /// Stop (a running smolvm machine) and delete one machine record through its CLI.
    pub(super) fn machine_record_steps(&mut self, m: &Machine) {
        let product = m.product;
        let process = m.pid.and_then(|pid| {
            self.pre
                .processes
                .iter()
                .find(|v| v.pid == pid)
                .map(|v| ProcessRef {
                    pid,
                    start_time: v.start_time,
                    uid: v.uid,
                })
        });
        if product == Product::Smolvm && matches!(m.state.as_str(), "running") {
            self.push(
                Action::StopMachine {
                    product,
                    name: m.name.clone(),
                    pid: process.map(|p| p.pid),
                    pid_start_time: process.map(|p| p.start_time),
                    state: m.state.clone(),
                },
                format!("Stop machine '{}'", m.name),
                "A running machine is stopped through its own CLI so the guest shuts down \
                 cleanly before its disks are removed.",
            );
        }
        self.push(
            Action::DeleteMachine {
                product,
                name: m.name.clone(),
                cascade: false,
                children: Vec::new(),
                bytes: 0,
                ephemeral: false,
                pid: process.map(|p| p.pid),
                pid_start_time: process.map(|p| p.start_time),
            },
            match product {
                Product::Smolvm => format!("Delete machine '{}' ({})", m.name, m.state),
                Product::Celesto => format!("Delete sandbox '{}' ({})", m.name, m.state),
            },
            "Deleting through the CLI stops the VM and releases what it set up (a paused \
             machine is deleted with --force, which also removes its saved execution).",
        );
    }

    /// Step 2: Surviving VM processes of this HOME.
    pub(super) fn process_steps(&mut self) {
        let pre = self.pre;
        let products = self.products.clone();
        for v in pre
            .processes
            .iter()
            .filter(|v| products.contains(&v.product))
        {
            self.push(
                Action::SignalProcess {
                    pid: v.pid,
                    start_time: v.start_time,
                    product: v.product,
                    owner: None,
                    uid: v.uid,
                    shape: v.shape.as_str().to_string(),
                    uninstall: true,
                    held_bytes: v.held_deleted_bytes,
                },
                format!("End VM process {} ({})", v.pid, v.shape.label()),
                "A VM process still running after its machine was deleted holds on to its disks' space \
                 and files in use; it is ended only while its pid and start time still match.",
            );
        }
    }

    /// Step 3: macOS mounts.
    pub(super) fn mount_steps(&mut self) {
        if !self.chosen(Product::Smolvm) {
            return;
        }
        for m in &self.pre.mounts {
            self.push(
                Action::Detach {
                    mountpoint: m.clone(),
                },
                format!("Detach {}", m.display()),
                "A mounted pack layer makes removing its directory fail with 'Resource busy'; \
                 upstream's uninstaller misses the per-machine ones.",
            );
        }
        if !self.pre.mounts_checked {
            self.notes.push(
                "The mount table could not be read: a mounted layers-cs image stops the \
                 removal of the directory holding it, and is reported."
                    .into(),
            );
        }
    }

    /// Steps that would take something a keep rule keeps: named as kept by you, and left
    /// unticked unless `remove_kept` was chosen.
    pub(super) fn keep_rules(&mut self) {
        let pre = self.pre;
        for step in &mut self.steps {
            let kept: Vec<&crate::uninstall::preflight::KeptItem> =
                pre.kept.iter().filter(|k| takes(&step.action, k)).collect();
            let Some(k) = kept.first() else {
                continue;
            };
            let what = kept_what(k);
            let kept_why = crate::keep::kept_why(&k.rule);
            let unreadable = kept.iter().any(|k| k.rule == crate::keep::UNREADABLE);
            if self.opts.remove_kept && !unreadable {
                step.kept_by = kept.iter().map(|k| k.rule.clone()).collect();
                step.kept_by.dedup();
                step.why = format!(
                    "{} It takes {what}, {kept_why}: removed because you chose --remove-kept.",
                    step.why
                );
                continue;
            }
            step.checked = false;
            step.kept_by = kept.iter().map(|k| k.rule.clone()).collect();
            step.kept_by.dedup();
            step.why = format!("{} Left out: it takes {what}, {kept_why}.", step.why);
            let entry = match &k.machine {
                Some(_) => format!("{what}, {kept_why}"),
                None => kept_why.clone(),
            };
            let path = k
                .path
                .clone()
                .or_else(|| k.record.clone())
                .unwrap_or_default();
            if !self.kept.iter().any(|x| x.what == entry && x.path == path) {
                self.kept.push(Kept {
                    path,
                    what: entry,
                    how: "--remove-kept".into(),
                });
            }
        }
    }

    /// A machine goes whole or not at all (issue 29): a ticked step that would remove the
    /// inventory holding a machine's record is left out while that machine's directory stays
    /// (no ticked step removes or deletes it), since the directory would then be judged a
    /// leftover of no machine. Until nothing changes: leaving one out can keep another.
    pub(super) fn records_stay_with_their_dirs(&mut self) {
        loop {
            let goes = |steps: &[PlanStep], m: &crate::model::Machine, d: &Path| {
                steps.iter().filter(|s| s.checked).any(|s| match &s.action {
                    Action::RemoveTree { path, .. } => d.starts_with(path),
                    Action::DeleteMachine {
                        product,
                        name,
                        children,
                        ..
                    } => *product == m.product && (name == &m.name || children.contains(&m.name)),
                    _ => false,
                })
            };
            let stays = |steps: &[PlanStep], path: &Path| {
                self.pre.machines.iter().find(|m| {
                    m.db.as_deref().is_some_and(|db| db.starts_with(path))
                        && m.dir.as_deref().is_some_and(|d| {
                            crate::fsread::lstat(d).is_some() && !goes(steps, m, d)
                        })
                })
            };
            let found = self
                .steps
                .iter()
                .enumerate()
                .find_map(|(i, s)| match &s.action {
                    Action::RemoveTree { path, .. } if s.checked => {
                        stays(&self.steps, path).map(|m| (i, m))
                    }
                    _ => None,
                });
            let Some((i, m)) = found else {
                return;
            };
            let dir = m
                .dir
                .as_deref()
                .map(crate::pathser::shown)
                .unwrap_or_default();
            let why = format!(
                "it holds the record of {} {}, whose directory {dir} stays; a machine is removed whole or not at all.",
                m.product.display_name(),
                m.name
            );
            let step = &mut self.steps[i];
            step.checked = false;
            step.why = format!("{} Left out: {why}", step.why);
            self.notes
                .push(format!("Step {} is left out: {why}", i + 1));
        }
    }

    pub(super) fn finish(self) -> UninstallPlan {
        let clis = self
            .products
            .iter()
            .filter_map(|p| self.pre.cli(*p).map(|c| (*p, c.to_path_buf())))
            .collect();
        UninstallPlan {
            schema: UNINSTALL_PLAN_SCHEMA.to_string(),
            home: self.home,
            products: self.products,
            options: self.opts.clone(),
            steps: self.steps,
            kept: self.kept,
            user_commands: self.user_commands,
            removed_roots: self.removed_roots,
            notes: self.notes,
            clis,
            platform: self.pre.platform,
        }
    }
}

/// A kept item in words: the machine, the path, or the process.
pub(super) fn kept_what(k: &crate::uninstall::preflight::KeptItem) -> String {
    match (&k.path, &k.machine, k.pid) {
        (_, Some(m), _) => format!("{} {m}", k.product.display_name()),
        (Some(p), None, _) => crate::pathser::shown(p),
        (None, None, Some(pid)) => format!("VM process {pid}"),
        (None, None, None) => "an item".into(),
    }
}

/// Whether carrying out `action` would take the kept item `k`.
pub(super) fn takes(action: &Action, k: &crate::uninstall::preflight::KeptItem) -> bool {
    match action {
        Action::RemoveTree { path, .. } => k
            .path
            .iter()
            .chain(&k.record)
            .any(|p| p.starts_with(path) || path.starts_with(p)),
        Action::DeleteMachine {
            product,
            name,
            children,
            ..
        } => {
            *product == k.product
                && k.machine
                    .as_ref()
                    .is_some_and(|m| m == name || children.contains(m))
        }
        Action::StopMachine { product, name, .. } => {
            *product == k.product && k.machine.as_ref() == Some(name)
        }
        Action::SignalProcess { pid, .. } => k.pid == Some(*pid),
        _ => false,
    }
}

/// A state directory's entries: its product's own, foreign ones, and credentials kept.
pub(super) fn sort_entries(
    d: &StateDir,
    entries: &[crate::fsread::Entry],
    remove_credentials: bool,
) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
    let (mut own, mut foreign, mut secrets) = (Vec::new(), Vec::new(), Vec::new());
    for e in entries {
        let n = e.name_str().unwrap_or("");
        if d.kind.credential(n) && !remove_credentials {
            secrets.push(e.path.clone());
        } else if d.kind.recognises(n) {
            own.push(e.path.clone());
        } else {
            foreign.push(e.path.clone());
        }
    }
    (own, foreign, secrets)
}
