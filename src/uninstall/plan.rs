//! The uninstall procedure as one reviewable plan: steps in order, each with a summary, a reason
//! and a `checked` flag the user can clear.
//!
//! Built from a [`Preflight`] only (pure): stop and delete machines through the product's CLI,
//! reap this HOME's surviving VM processes, detach macOS mounts, remove each chosen product's
//! state and caches, its install prefix entries and launchers, then what upstream's uninstaller
//! leaves behind. `~/.smolvm` is shared by both products: only the entries of the products being
//! uninstalled are removed, and the directory itself only when nothing else is left in it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exec::reap::ProcessRef;
use crate::model::{human_bytes, Machine, Platform, Product};
use crate::plan::{Action, Plan, PlannedAction, PLAN_SCHEMA};

use crate::install::Install;
use crate::roots::is_system_path;

use super::preflight::{Preflight, SharedDotSmolvm, StateDir, StateKind};

/// Schema name of an uninstall plan.
pub const UNINSTALL_PLAN_SCHEMA: &str = "smolsweep.uninstall.plan/1";

/// Which product(s) to uninstall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProductChoice {
    /// Celesto SmolVM only.
    Celesto,
    /// smol-machines smolvm only.
    Smolvm,
    /// Both products.
    All,
}

impl ProductChoice {
    /// The products chosen.
    pub fn products(self) -> Vec<Product> {
        match self {
            ProductChoice::Celesto => vec![Product::Celesto],
            ProductChoice::Smolvm => vec![Product::Smolvm],
            ProductChoice::All => Product::ALL.to_vec(),
        }
    }
}

/// The user's choices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UninstallOptions {
    /// Which product(s) to uninstall.
    pub product: ProductChoice,
    /// Also remove `~/.config/smolvm`, Celesto credentials and SSH keys.
    pub remove_credentials: bool,
    /// Also remove the `# smolvm` PATH block from shell startup files (backed up first).
    pub remove_path_block: bool,
    /// Also remove what keep rules keep inside the product's state (an explicit choice: the
    /// steps that would take a kept item are otherwise left unticked).
    #[serde(default)]
    pub remove_kept: bool,
}

impl Default for UninstallOptions {
    fn default() -> Self {
        UninstallOptions {
            product: ProductChoice::All,
            remove_credentials: false,
            remove_path_block: false,
            remove_kept: false,
        }
    }
}

/// A step with what a person sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// What the executor does for it.
    #[serde(flatten)]
    pub action: Action,
    /// What the step does, in words ("Remove ~/.smolvm (smolvm's install, 25.9 MB)").
    pub summary: String,
    /// Why it is part of the uninstall.
    pub why: String,
    /// Cleared by the user to skip this step.
    pub checked: bool,
    /// Allocated bytes the preflight measured for what this step removes.
    pub bytes: u64,
    /// The keep rules of what this step would take. Such a step starts unticked (ticked with
    /// `--remove-kept`); ticking it is the explicit choice that overrides exactly these rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_by: Vec<String>,
}

impl PlanStep {
    /// What the step removes in words (`25.9 MB`), or nothing when it removes no bytes: beside
    /// the step in the printed plan and in the window.
    pub fn size(&self) -> String {
        match self.bytes {
            0 => String::new(),
            b => human_bytes(b),
        }
    }
}

/// Something deliberately left in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// Where it is.
    pub path: PathBuf,
    /// What it is, in words.
    pub what: String,
    /// How to have Smolsweep remove it.
    pub how: String,
}

/// A command for the user to run (root, a package manager): never run by Smolsweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserCommand {
    /// The product it belongs to.
    pub product: Product,
    /// The exact command to run.
    pub command: String,
    /// Why Smolsweep does not run it itself.
    pub why: String,
}

/// The whole procedure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UninstallPlan {
    /// `smolsweep.uninstall.plan/1` ([`UNINSTALL_PLAN_SCHEMA`]).
    pub schema: String,
    /// The HOME being uninstalled from.
    pub home: PathBuf,
    /// The products being removed.
    pub products: Vec<Product>,
    /// The choices it was made with.
    pub options: UninstallOptions,
    /// Every step, in the order they run; the unticked ones are skipped.
    pub steps: Vec<PlanStep>,
    /// What is deliberately left in place.
    pub kept: Vec<Kept>,
    /// Commands for the user to run (root, a package manager).
    pub user_commands: Vec<UserCommand>,
    /// Every directory a removal may touch (the roots the proof checks afterwards).
    pub removed_roots: Vec<PathBuf>,
    /// Notes a person should read before confirming.
    pub notes: Vec<String>,
    /// The CLI of each product's install being removed (its machine steps run it).
    #[serde(default)]
    pub clis: Vec<(Product, PathBuf)>,
    /// Where it was made (the core plan's platform).
    #[serde(default = "Platform::current")]
    pub platform: Platform,
}

impl UninstallPlan {
    /// Steps that will run.
    pub fn checked(&self) -> impl Iterator<Item = &PlanStep> {
        self.steps.iter().filter(|s| s.checked)
    }
    /// How many steps will run.
    pub fn checked_count(&self) -> usize {
        self.checked().count()
    }
    /// Allocated bytes the ticked steps remove, as the preflight measured them: the one
    /// estimate of every plan ([`Plan::estimate_of`]) over the ticked steps together (a file
    /// two steps delete under two names counts once).
    pub fn checked_bytes(&self) -> u64 {
        let actions: Vec<PlannedAction> = self
            .checked()
            .map(|s| PlannedAction::of(s.action.clone()))
            .collect();
        Plan::estimate_of(&actions)
    }
    /// Whether no step will run.
    pub fn is_empty(&self) -> bool {
        self.checked_count() == 0
    }

    /// "43 steps; 42 will run, freeing about 1.2 GB; 1 is left out": the plan's one sentence
    /// of counts, shown above its steps and in the question before it runs.
    pub fn tally(&self) -> String {
        let (all, run) = (self.steps.len(), self.checked_count());
        let mut t = format!("{all} step{}; ", if all == 1 { "" } else { "s" });
        t += &match run {
            0 => "none will run".to_string(),
            n if n == all && all == 1 => "it will run".to_string(),
            n if n == all => "all will run".to_string(),
            n => format!("{n} will run"),
        };
        if run > 0 {
            t = crate::view::freeing(&t, self.checked_bytes());
        }
        if run < all && run > 0 {
            t += &format!(
                "; {} {} left out",
                all - run,
                if all - run == 1 { "is" } else { "are" }
            );
        }
        t
    }
    /// The products' names for a person, joined: `smol-machines smolvm` or `Celesto SmolVM and
    /// smol-machines smolvm`.
    pub fn product_names(&self) -> String {
        let names: Vec<&str> = self.products.iter().map(|p| p.display_name()).collect();
        names.join(" and ")
    }

    /// The question before the plan runs: "Uninstall smol-machines smolvm from /home/me: 5
    /// steps; all will run, freeing about 1.2 GB." (the ticked steps, in the plan's order).
    pub fn question(&self) -> String {
        format!(
            "Uninstall {} from {}: {}.",
            self.product_names(),
            self.home.display(),
            self.tally()
        )
    }

    /// The core plan of the checked steps, in step order (content-hashed: made anew whenever a
    /// tick changes), and the step index of each of its actions. Every removal names the
    /// mounts inside it that the plan detaches, so it waits for them.
    pub fn core_plan(&self) -> (Plan, Vec<usize>) {
        let mounts: Vec<&PathBuf> = self
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::Detach { mountpoint } => Some(mountpoint),
                _ => None,
            })
            .collect();
        let mut actions = Vec::new();
        let mut index_of = Vec::new();
        let mut bounds: BTreeSet<PathBuf> = BTreeSet::new();
        for (i, s) in self.steps.iter().enumerate().filter(|(_, s)| s.checked) {
            let mut action = s.action.clone();
            if let Action::RemoveTree {
                path,
                root,
                mounts_inside,
                ..
            } = &mut action
            {
                *mounts_inside = mounts
                    .iter()
                    .filter(|m| m.starts_with(&*path))
                    .map(|m| (*m).clone())
                    .collect();
                let bound = if path == root {
                    path.parent().map(Path::to_path_buf)
                } else {
                    Some(root.clone())
                };
                bounds.extend(bound);
            }
            actions.push(PlannedAction {
                action,
                summary: s.summary.clone(),
            });
            index_of.push(i);
        }
        let estimated_bytes = Plan::estimate_of(&actions);
        let mut plan = Plan {
            schema: PLAN_SCHEMA.to_string(),
            id: String::new(),
            created_at: crate::plan::now_secs(),
            scanned_at: 0,
            scanned_at_ns: 0,
            home: self.home.clone(),
            platform: self.platform,
            roots: bounds.into_iter().collect(),
            actions,
            estimated_bytes,
            skipped_at_plan: Vec::new(),
            keep_overrides: self
                .checked()
                .flat_map(|s| s.kept_by.iter().cloned())
                .collect::<BTreeSet<String>>()
                .into_iter()
                .collect(),
        };
        plan.id = plan.content_id();
        (plan, index_of)
    }

    /// Clear (or set) the `checked` flag of step `index`.
    pub fn set_checked(&mut self, index: usize, checked: bool) -> bool {
        match self.steps.get_mut(index) {
            Some(s) => {
                s.checked = checked;
                true
            }
            None => false,
        }
    }
}

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
struct Builder<'p> {
    pre: &'p Preflight,
    opts: &'p UninstallOptions,
    products: Vec<Product>,
    home: PathBuf,
    steps: Vec<PlanStep>,
    kept: Vec<Kept>,
    user_commands: Vec<UserCommand>,
    notes: Vec<String>,
    removed_roots: Vec<PathBuf>,
}

impl Builder<'_> {
    fn chosen(&self, p: Product) -> bool {
        self.products.contains(&p)
    }

    /// A ticked step doing `action`; its size is what the action is expected to free
    /// ([`Plan::estimate_of`]), so the steps add up to the plan's estimate.
    fn push(&mut self, action: Action, summary: String, why: &str) {
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
    fn push_remove(
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

    fn keep_credential(&mut self, path: &Path, what: &str) {
        self.kept.push(Kept {
            path: path.to_path_buf(),
            what: what.into(),
            how: "--remove-credentials".into(),
        });
    }

    /// Step 1: Machines through the CLI.
    fn machine_steps(&mut self) {
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
    fn machine_record_steps(&mut self, m: &Machine) {
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
    fn process_steps(&mut self) {
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
    fn mount_steps(&mut self) {
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

    /// Step 4: State and caches, then credentials on request. The CLI calls above may create the
    /// smolvm data and cache roots (every `machine` command opens the database and lock files),
    /// so those are planned whenever a smolvm CLI step is.
    fn state_dir_steps(&mut self) {
        let smolvm_cli_steps = self.steps.iter().any(|s| {
            matches!(
                &s.action,
                Action::StopMachine {
                    product: Product::Smolvm,
                    ..
                } | Action::DeleteMachine {
                    product: Product::Smolvm,
                    ..
                }
            )
        });
        let pre = self.pre;
        let products = self.products.clone();
        for d in pre
            .state_dirs
            .iter()
            .filter(|d| products.contains(&d.product))
        {
            let created_by_cli =
                smolvm_cli_steps && matches!(d.kind, StateKind::DataRoot | StateKind::CacheRoot);
            self.state_dir(d, created_by_cli);
        }
    }

    /// One state directory: left alone, kept, shared with the other product, or this
    /// product's own.
    fn state_dir(&mut self, d: &StateDir, created_by_cli: bool) {
        let home = &self.home;
        if !d.exists && !created_by_cli {
            if !matches!(d.kind, StateKind::ConfigDir | StateKind::CelestoHome) {
                self.removed_roots.push(d.path.clone());
            }
            return;
        }
        if is_system_path(&d.path) {
            return;
        }
        if d.path == *home || home.starts_with(&d.path) {
            self.notes.push(format!(
                "{}{} is {}, so Smolsweep removes nothing there; `smolsweep scan` lists what {} left in it.",
                d.path.display(),
                via(&d.source),
                if d.path == *home { "HOME itself" } else { "a directory that holds HOME" },
                d.product.display_name()
            ));
            return;
        }
        if d.kind == StateKind::CelestoHome {
            return; // entry by entry below
        }
        if d.kind == StateKind::ConfigDir && !self.opts.remove_credentials {
            self.keep_credential(
                &d.path,
                "smolvm settings and container-registry credentials (config.toml)",
            );
            return;
        }
        // An image dir inside ~/.smolvm / ~/.celesto is handled with those directories.
        if d.path.parent() == Some(home.join(".smolvm").as_path())
            || d.path.parent() == Some(home.join(".celesto").as_path())
        {
            return;
        }
        // Another product's state inside this directory (a `SMOLVM_DATA_DIR` that Celesto
        // also reads through its alias, a data directory pointed into the other's tree): only
        // this product's own entries go.
        let shared_with = self.pre.state_dirs.iter().find(|o| {
            o.product != d.product && o.exists && o.path != d.path && o.path.starts_with(&d.path)
        });
        match shared_with {
            Some(other) => self.shared_state_dir(d, other),
            None => self.own_state_dir(d),
        }
    }

    /// A state directory that also holds the other product's state.
    fn shared_state_dir(&mut self, d: &StateDir, other: &StateDir) {
        if d.kind == StateKind::DataDir {
            for e in own_entries(d) {
                self.push_remove(
                    d.product,
                    &e,
                    &d.path,
                    format!("Remove {}", e.display()),
                    "Celesto's own files in a directory that also holds smol-machines \
                     state.",
                );
            }
        } else {
            self.notes.push(format!(
                "{} also holds {} ({}); it is left for you to sort out.",
                d.path.display(),
                other.path.display(),
                other.product.display_name()
            ));
        }
    }

    /// A state directory of this product only. Inside it only what the product writes goes;
    /// anything else is listed. Entries are checked one by one where the product's layout is
    /// known: listed once.
    fn own_state_dir(&mut self, d: &StateDir) {
        let entries = if d.exists && d.kind.has_layout() {
            crate::fsread::read_dir_or_empty(&d.path)
        } else {
            Vec::new()
        };
        let names: Vec<&str> = entries.iter().filter_map(|e| e.name_str()).collect();
        if !names.is_empty() && !d.kind.proves_layout(&names) {
            refuse_foreign_dir(d, &mut self.notes, &mut self.kept);
            return;
        }
        let (own, foreign, secrets) = sort_entries(d, &entries, self.opts.remove_credentials);
        for p in &secrets {
            self.keep_credential(p, "registry pull tokens (credentials)");
        }
        if !foreign.is_empty() || !secrets.is_empty() {
            entry_by_entry(
                self.pre,
                d,
                &own,
                &foreign,
                &mut self.steps,
                &mut self.notes,
            );
            return;
        }
        let what = d.kind.label();
        self.push(
            Action::RemoveTree {
                product: d.product,
                path: d.path.clone(),
                root: d.path.clone(),
                identity: crate::size::identity(&d.path).ok(),
                expected_bytes: d.allocated_bytes,
                mounts_inside: Vec::new(),
            },
            if d.exists {
                format!("Remove {} {}", what, d.path.display())
            } else {
                format!(
                    "Remove {} {} if the machine commands above create it",
                    what,
                    d.path.display()
                )
            },
            d.kind.why(),
        );
        self.removed_roots.push(d.path.clone());
    }

    /// Celesto's per-sandbox files in the shared socket directory (upstream never removes the
    /// libkrun configs; vsock sockets only at the next start).
    fn runtime_file_steps(&mut self) {
        if !self.chosen(Product::Celesto) {
            return;
        }
        for f in &self.pre.runtime_files {
            self.push(
                Action::RemoveTree {
                    product: f.product,
                    path: f.path.clone(),
                    // Bounded by the shared socket directory that holds it.
                    root: f.path.parent().unwrap_or(&f.path).to_path_buf(),
                    identity: crate::size::identity(&f.path).ok(),
                    expected_bytes: 0,
                    mounts_inside: Vec::new(),
                },
                format!("Remove {} (sandbox '{}')", f.path.display(), f.owner),
                "A runtime file of one of this HOME's sandboxes, left in the shared socket \
                 directory.",
            );
        }
    }

    /// Step 5: ~/.celesto entry by entry (credentials and keys kept unless asked).
    fn dot_celesto_steps(&mut self) {
        if !self.chosen(Product::Celesto) {
            return;
        }
        let dir = self.home.join(".celesto");
        let Ok(rd) = crate::fsread::read_dir(&dir) else {
            return;
        };
        let mut all_removed = true;
        for e in rd {
            let secret = matches!(e.name_str().unwrap_or(""), "credentials" | "keys");
            if secret && !self.opts.remove_credentials {
                all_removed = false;
                continue; // listed in `kept` from the preflight's credentials
            }
            self.push_remove(
                Product::Celesto,
                &e.path,
                &dir,
                format!("Remove {}", e.path.display()),
                "Celesto's per-user files (image cache, Firecracker binary, port forwards, \
                 telemetry and update-check state).",
            );
        }
        self.push(
            Action::RemoveDirIfEmpty {
                product: Product::Celesto,
                path: dir.clone(),
            },
            format!("Remove {} if nothing else is left in it", dir.display()),
            "The directory goes only when it is empty.",
        );
        if all_removed {
            self.removed_roots.push(dir);
        }
    }

    /// Step 6: ~/.smolvm: only the chosen products' entries.
    fn dot_smolvm_steps(&mut self) {
        let pre = self.pre;
        let Some(dot) = &pre.dot_smolvm else {
            return;
        };
        let remaining = dot.other_entries.len()
            + self.dot_smolvm_entries(dot, &dot.smolvm_entries, Product::Smolvm)
            + self.dot_smolvm_entries(dot, &dot.celesto_entries, Product::Celesto);
        let planned_any = self
            .steps
            .iter()
            .any(|s| matches!(&s.action, Action::RemoveTree { root, .. } if *root == dot.path));
        if !planned_any {
            return;
        }
        let product = if self.chosen(Product::Smolvm) {
            Product::Smolvm
        } else {
            Product::Celesto
        };
        self.push(
            Action::RemoveDirIfEmpty {
                product,
                path: dot.path.clone(),
            },
            format!(
                "Remove {} if nothing else is left in it",
                dot.path.display()
            ),
            "~/.smolvm is used by both products; it goes only when it is empty.",
        );
        if remaining == 0 {
            self.removed_roots.push(dot.path.clone());
        } else {
            self.notes.push(format!(
                "{} holds {} {} not belong to the product(s) being uninstalled; they are left in place.",
                dot.path.display(),
                remaining,
                if remaining == 1 { "entry that does" } else { "entries that do" }
            ));
        }
    }

    /// Plan the removal of `product`'s entries in ~/.smolvm; how many stay.
    fn dot_smolvm_entries(
        &mut self,
        dot: &SharedDotSmolvm,
        entries: &[PathBuf],
        product: Product,
    ) -> usize {
        let mut remaining = 0;
        for e in entries {
            let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let secret = product == Product::Celesto && matches!(name, "credentials" | "keys");
            if !self.chosen(product) || (secret && !self.opts.remove_credentials) {
                remaining += 1;
                continue;
            }
            let why = match product {
                Product::Smolvm => {
                    "Part of the smolvm install prefix (install.sh puts the wrapper, \
                     smolvm-bin, lib/, templates and .version here)."
                }
                Product::Celesto => {
                    "PyPI smolvm / older Celesto files kept in ~/.smolvm (image cache, \
                     Firecracker binary, port forwards)."
                }
            };
            self.push_remove(
                product,
                e,
                &dot.path,
                format!("Remove {}", e.display()),
                why,
            );
        }
        remaining
    }

    /// Step 7: Launchers pointing into a prefix that goes.
    fn launcher_steps(&mut self) {
        if !self.chosen(Product::Smolvm) {
            return;
        }
        for l in &self.pre.launchers {
            let Some(prefix) = &l.into_prefix else {
                self.notes.push(format!(
                    "{} points to {}, not into a smolvm install prefix; left alone.",
                    l.path.display(),
                    l.target.display()
                ));
                continue;
            };
            if is_system_path(prefix) {
                continue;
            }
            self.push(
                Action::RemoveLauncher {
                    link: l.path.clone(),
                    target: l.target.clone(),
                    prefix: prefix.clone(),
                },
                format!("Remove launcher {}", l.path.display()),
                "The symlink points into the removed install prefix (upstream's uninstaller \
                 leaves ~/.local/bin/smol).",
            );
        }
    }

    /// Step 8: PATH block.
    fn path_block_steps(&mut self) {
        if !self.chosen(Product::Smolvm) {
            return;
        }
        let pre = self.pre;
        let files: BTreeSet<&Path> = pre.path_blocks.iter().map(|b| b.file.as_path()).collect();
        for f in files {
            if self.opts.remove_path_block {
                self.push(
                    Action::RemovePathBlock {
                        file: f.to_path_buf(),
                    },
                    format!("Remove the '# smolvm' PATH lines from {}", f.display()),
                    "Only the lines install.sh appended are taken out; the file is backed up \
                     first and every other byte stays as it is.",
                );
            } else {
                self.kept.push(Kept {
                    path: f.to_path_buf(),
                    what: "the '# smolvm' PATH lines install.sh appended".into(),
                    how: "--remove-path-block".into(),
                });
            }
        }
    }

    /// Credentials the preflight found and the plan keeps.
    fn keep_credentials(&mut self) {
        if self.opts.remove_credentials {
            return;
        }
        let pre = self.pre;
        let products = self.products.clone();
        for c in pre
            .credentials
            .iter()
            .filter(|c| products.contains(&c.product))
        {
            if !self.kept.iter().any(|k| k.path == c.path) {
                self.keep_credential(&c.path, &c.what);
            }
        }
    }

    /// Installs Smolsweep does not remove itself, and system files: commands for the user.
    fn install_commands(&mut self) {
        let pre = self.pre;
        let products = self.products.clone();
        for i in pre
            .installs
            .iter()
            .filter(|i| products.contains(&i.product))
        {
            let Some(cmd) = install_command(i, &self.home) else {
                continue;
            };
            let why = format!(
                "{} {} install at {}",
                i.product.display_name(),
                i.method,
                i.path.display()
            );
            self.user_command(i.product, cmd, why);
        }
        for s in pre.system.iter().filter(|s| products.contains(&s.product)) {
            let why = format!("{} ({})", s.what, s.path.display());
            self.user_command(s.product, s.command.clone(), why);
        }
    }

    fn user_command(&mut self, product: Product, command: String, why: String) {
        if !self.user_commands.iter().any(|u| u.command == command) {
            self.user_commands.push(UserCommand {
                product,
                command,
                why,
            });
        }
    }

    /// Steps that would take something a keep rule keeps: named as kept by you, and left
    /// unticked unless `remove_kept` was chosen.
    fn keep_rules(&mut self) {
        let pre = self.pre;
        for step in &mut self.steps {
            let kept: Vec<&super::preflight::KeptItem> =
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
    fn records_stay_with_their_dirs(&mut self) {
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

    fn finish(self) -> UninstallPlan {
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
fn kept_what(k: &super::preflight::KeptItem) -> String {
    match (&k.path, &k.machine, k.pid) {
        (_, Some(m), _) => format!("{} {m}", k.product.display_name()),
        (Some(p), None, _) => crate::pathser::shown(p),
        (None, None, Some(pid)) => format!("VM process {pid}"),
        (None, None, None) => "an item".into(),
    }
}

/// Whether carrying out `action` would take the kept item `k`.
fn takes(action: &Action, k: &super::preflight::KeptItem) -> bool {
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
fn sort_entries(
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

/// The command that removes an install Smolsweep does not remove itself; `None` for those it
/// removes (`~/.smolvm`) or lists with the system files (a system prefix, `/opt/smolvm`).
fn install_command(i: &Install, home: &Path) -> Option<String> {
    Some(match i.method.as_str() {
        "opt" => return None,
        "script" if i.path == home.join(".smolvm") || is_system_path(&i.path) => return None,
        "script" => format!(
            "rm -rf {}   # install.sh --prefix; check it holds nothing of yours first",
            i.path.display()
        ),
        "pypi" | "wheel" => {
            let dist = i.distribution.clone().unwrap_or_else(|| match i.product {
                Product::Celesto => "celesto".into(),
                Product::Smolvm => "smolmachines".into(),
            });
            match python_of(&i.path) {
                Some(py) => format!("{} -m pip uninstall {dist}", py.display()),
                None => format!(
                    "pip uninstall {dist}   # in the environment at {}",
                    i.path.display()
                ),
            }
        }
        "homebrew" => "brew uninstall smolvm".to_string(),
        "deb" => "sudo apt remove smolvm   # or: sudo dnf remove smolvm".to_string(),
        _ => format!(
            "remove {} with the tool that installed it",
            i.path.display()
        ),
    })
}

/// ` (CELESTO_DATA_DIR points there)` for a directory a variable chose, empty for a default.
fn via(source: &str) -> String {
    match source {
        "" | "default" | "legacy" | "system" => String::new(),
        v => format!(" ({v} points there)"),
    }
}

/// A directory a variable (or a default) points at that shows nothing of its product's layout
/// (a `CELESTO_DATA_DIR` at a project): nothing in it is removed, and the plan says why.
fn refuse_foreign_dir(
    d: &super::preflight::StateDir,
    notes: &mut Vec<String>,
    kept: &mut Vec<Kept>,
) {
    let product = d.product.display_name();
    notes.push(format!(
        "{}{} holds nothing {product} writes there (no inventory, no layout of {product}), so nothing in it is removed.",
        d.path.display(),
        via(&d.source),
    ));
    kept.push(Kept {
        path: d.path.clone(),
        what: format!("not {product}'s: nothing in it is something {product} writes"),
        how: "remove it yourself if it is yours to remove".into(),
    });
}

/// A state directory holding entries its product does not write: its own entries are removed
/// one by one, each foreign one is listed unticked ("not <product>'s, left in place"), and the directory
/// goes only if it is empty by then.
fn entry_by_entry(
    pre: &Preflight,
    d: &super::preflight::StateDir,
    own: &[PathBuf],
    foreign: &[PathBuf],
    steps: &mut Vec<PlanStep>,
    notes: &mut Vec<String>,
) {
    let product = d.product.display_name();
    let entry = |path: &Path, checked: bool, summary: String, why: &str| PlanStep {
        action: Action::RemoveTree {
            product: d.product,
            path: path.to_path_buf(),
            root: d.path.clone(),
            identity: crate::size::identity(path).ok(),
            expected_bytes: size_of(pre, path),
            mounts_inside: Vec::new(),
        },
        summary,
        why: why.to_string(),
        checked,
        bytes: size_of(pre, path),
        kept_by: Vec::new(),
    };
    for p in own {
        steps.push(entry(
            p,
            true,
            format!("Remove {}", p.display()),
            &format!("{product} writes this in its {}.", d.kind.label()),
        ));
    }
    for p in foreign {
        steps.push(entry(
            p,
            false,
            format!("Not {product}'s, left in place: {}", p.display()),
            &format!(
                "Smolsweep does not know this as something {product} writes, so it is kept; remove it yourself if it is yours to remove."
            ),
        ));
    }
    steps.push(PlanStep {
        action: Action::RemoveDirIfEmpty {
            product: d.product,
            path: d.path.clone(),
        },
        summary: format!("Remove {} if nothing else is left in it", d.path.display()),
        why: "It also holds files that are not the product's; it goes only when it is empty."
            .into(),
        checked: true,
        bytes: 0,
        kept_by: Vec::new(),
    });
    if !foreign.is_empty() {
        notes.push(format!(
            "{} also holds {} entr{} that {product} does not write; they are left in place (remove them yourself if they are yours to remove).",
            d.path.display(),
            foreign.len(),
            if foreign.len() == 1 { "y" } else { "ies" }
        ));
    }
}

/// The interpreter of a virtualenv-style prefix (`<prefix>/bin/python3`), when the install path
/// looks like one (or like its `site-packages`).
fn python_of(path: &Path) -> Option<PathBuf> {
    for anc in path.ancestors() {
        let py = anc.join("bin/python3");
        if anc.join("pyvenv.cfg").exists() && py.exists() {
            return Some(py);
        }
    }
    None
}

/// What its product writes directly in a state directory, by the table of kinds.
fn own_entries(d: &StateDir) -> Vec<PathBuf> {
    crate::fsread::read_dir_or_empty(&d.path)
        .into_iter()
        .filter(|e| e.name_str().is_some_and(|n| d.kind.recognises(n)))
        .map(|e| e.path)
        .collect()
}

fn size_of(pre: &Preflight, path: &Path) -> u64 {
    // Entry sizes are not measured in the preflight; measure now (read-only).
    let _ = pre;
    crate::size::Sizer::new()
        .measure(path)
        .map(|m| m.allocated)
        .unwrap_or(0)
}

/// The plan for people.
pub fn render(plan: &UninstallPlan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Uninstall plan for {} ({}): {}",
        plan.home.display(),
        plan.product_names(),
        plan.tally()
    );
    for (i, st) in plan.steps.iter().enumerate() {
        let size = match st.size() {
            z if z.is_empty() => z,
            z => format!(" — {z}"),
        };
        let _ = writeln!(
            s,
            "  [{}] {:>2}. {}{size}",
            if st.checked { "x" } else { " " },
            i + 1,
            st.summary
        );
    }
    s.push_str(&render_leftovers(plan));
    s
}

/// What the plan keeps and what the user runs: shown with the plan and again after a run.
pub fn render_leftovers(plan: &UninstallPlan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if !plan.kept.is_empty() {
        let _ = writeln!(s, "Left in place:");
        for k in &plan.kept {
            let _ = writeln!(
                s,
                "  {} — {} (remove with {})",
                k.path.display(),
                k.what,
                k.how
            );
        }
    }
    if !plan.user_commands.is_empty() {
        let _ = writeln!(s, "Run these yourself (Smolsweep does not):");
        for c in &plan.user_commands {
            let _ = writeln!(s, "  {}   # {}", c.command, c.why);
        }
    }
    for n in &plan.notes {
        let _ = writeln!(s, "Note: {n}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::Install;
    use crate::model::Platform;
    use crate::pathblock::PathBlock;
    use crate::uninstall::preflight::{
        Credential, Launcher, SharedDotSmolvm, StateDir, PREFLIGHT_SCHEMA,
    };

    fn pre(home: &Path) -> Preflight {
        Preflight {
            schema: PREFLIGHT_SCHEMA.into(),
            home: home.to_path_buf(),
            platform: Platform::Linux,
            installs: vec![],
            state_dirs: vec![],
            dot_smolvm: None,
            machines: vec![],
            processes: vec![],
            mounts: vec![],
            mounts_checked: true,
            launchers: vec![],
            path_blocks: vec![],
            credentials: vec![],
            runtime_files: vec![],
            system: vec![],
            problems: vec![],
            kept: vec![],
        }
    }

    /// A smolvm machine record of `db`, as the preflight reads it.
    fn record(name: &str, state: &str, db: &Path) -> Machine {
        crate::uninstall::preflight::as_recorded(Product::Smolvm, name, state, None, db)
    }

    fn dir(product: Product, kind: &str, path: PathBuf) -> StateDir {
        StateDir {
            product,
            kind: StateKind::parse(kind).unwrap(),
            path,
            exists: true,
            allocated_bytes: 4096,
            apparent_bytes: 4096,
            mounts: vec![],
            source: "default".into(),
            label: String::new(),
            size: String::new(),
        }
    }

    fn opts(product: ProductChoice) -> UninstallOptions {
        UninstallOptions {
            product,
            ..UninstallOptions::default()
        }
    }

    fn removed(plan: &UninstallPlan) -> Vec<PathBuf> {
        plan.steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::RemoveTree { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn never_plans_home_slash_or_system_paths() {
        let home = PathBuf::from("/home/u");
        let mut p = pre(&home);
        p.state_dirs = vec![
            dir(Product::Celesto, "data_dir", home.clone()),
            dir(Product::Celesto, "data_dir", PathBuf::from("/")),
            dir(
                Product::Celesto,
                "data_dir",
                PathBuf::from("/var/lib/celesto"),
            ),
            dir(
                Product::Smolvm,
                "data_root",
                PathBuf::from("/var/lib/smolvm/.local/share/smolvm"),
            ),
            dir(Product::Smolvm, "cache_root", home.join(".cache/smolvm")),
        ];
        let plan = build(&p, &opts(ProductChoice::All));
        assert_eq!(removed(&plan), [home.join(".cache/smolvm")]);
        for s in &plan.steps {
            if let Action::RemoveTree { path, root, .. } = &s.action {
                assert!(crate::exec::remove::refusal(path, root, &home).is_none());
            }
        }
    }

    #[test]
    fn step_sizes_names_and_the_question_are_the_core_s_words() {
        let home = PathBuf::from("/home/u");
        let mut p = pre(&home);
        p.state_dirs = vec![dir(
            Product::Smolvm,
            "cache_root",
            home.join(".cache/smolvm"),
        )];
        let mut plan = build(&p, &opts(ProductChoice::Smolvm));
        let i = plan.steps.iter().position(|s| s.bytes > 0).unwrap();
        assert_eq!(plan.steps[i].size(), human_bytes(plan.steps[i].bytes));
        assert!(plan
            .steps
            .iter()
            .filter(|s| s.bytes == 0)
            .all(|s| s.size().is_empty()));
        assert_eq!(plan.product_names(), "smol-machines smolvm");
        assert_eq!(
            plan.question(),
            format!(
                "Uninstall smol-machines smolvm from /home/u: {}.",
                plan.tally()
            )
        );
        plan.set_checked(i, false);
        assert!(plan.question().contains("left out") || plan.steps.len() == 1);
    }

    #[test]
    fn shared_dot_smolvm_keeps_the_other_products_entries() {
        let home = PathBuf::from("/home/u");
        let dot = home.join(".smolvm");
        let mut p = pre(&home);
        p.dot_smolvm = Some(SharedDotSmolvm {
            path: dot.clone(),
            smolvm_entries: vec![dot.join("lib"), dot.join("smolvm-bin")],
            celesto_entries: vec![dot.join("images"), dot.join("keys")],
            other_entries: vec![],
            smolvm_version: Some("1.32.2".into()),
        });
        p.credentials = vec![Credential {
            product: Product::Celesto,
            path: dot.join("keys"),
            what: "SSH keys".into(),
        }];
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        assert_eq!(removed(&plan), [dot.join("lib"), dot.join("smolvm-bin")]);
        assert!(plan
            .steps
            .iter()
            .any(|s| matches!(&s.action, Action::RemoveDirIfEmpty { path, .. } if *path == dot)));
        assert!(!plan.removed_roots.contains(&dot));

        let plan = build(&p, &opts(ProductChoice::Celesto));
        assert_eq!(removed(&plan), [dot.join("images")]);
        assert!(plan.kept.iter().any(|k| k.path == dot.join("keys")));

        let mut o = opts(ProductChoice::All);
        o.remove_credentials = true;
        let plan = build(&p, &o);
        assert_eq!(removed(&plan).len(), 4);
        assert!(plan.removed_roots.contains(&dot));
    }

    #[test]
    fn path_block_and_config_only_when_asked() {
        let home = PathBuf::from("/home/u");
        let mut p = pre(&home);
        p.path_blocks = vec![PathBlock {
            file: home.join(".bashrc"),
            line: 4,
            lines: vec![String::new(), "# smolvm".into()],
        }];
        p.state_dirs = vec![dir(
            Product::Smolvm,
            "config_dir",
            home.join(".config/smolvm"),
        )];
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        assert!(!plan
            .steps
            .iter()
            .any(|s| matches!(s.action, Action::RemovePathBlock { .. })));
        assert!(removed(&plan).is_empty());
        assert_eq!(plan.kept.len(), 2);
        let mut o = opts(ProductChoice::Smolvm);
        o.remove_path_block = true;
        o.remove_credentials = true;
        let plan = build(&p, &o);
        assert!(plan.steps.iter().any(
            |s| matches!(&s.action, Action::RemovePathBlock { file } if *file == home.join(".bashrc"))
        ));
        assert_eq!(removed(&plan), [home.join(".config/smolvm")]);
        // Celesto alone never touches smolvm's PATH block.
        let plan = build(&p, &opts(ProductChoice::Celesto));
        assert!(plan.steps.is_empty());
    }

    #[test]
    fn machines_go_first_through_the_cli_and_only_when_one_is_found() {
        let home = PathBuf::from("/home/u");
        let mut p = pre(&home);
        let db = home.join(".local/share/smolvm/server/smolvm.db");
        p.machines = vec![record("a", "running", &db), record("b", "paused", &db)];
        p.state_dirs = vec![dir(
            Product::Smolvm,
            "cache_root",
            home.join(".cache/smolvm"),
        )];
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        assert!(plan.steps.iter().all(|s| !matches!(
            s.action,
            Action::StopMachine { .. } | Action::DeleteMachine { .. }
        )));
        assert!(plan
            .notes
            .iter()
            .any(|n| n.contains("No smol-machines smolvm command")));

        p.installs = vec![Install {
            product: Product::Smolvm,
            method: "script".into(),
            path: home.join(".smolvm"),
            executable: Some(home.join(".smolvm/smolvm")),
            version: Some("1.32.2".into()),
            distribution: None,
        }];
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        let names: Vec<&str> = plan.steps.iter().map(|s| s.action.name()).collect();
        // Stop only the running one (a paused one refuses stop); delete both; then state.
        assert_eq!(
            &names[..4],
            [
                "stop_machine",
                "delete_machine",
                "delete_machine",
                "remove_tree"
            ]
        );
        // A data root that does not exist yet is planned too: the machine commands create it.
        let mut absent = dir(
            Product::Smolvm,
            "data_root",
            home.join(".local/share/smolvm"),
        );
        absent.exists = false;
        p.state_dirs.push(absent);
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        assert!(removed(&plan).contains(&home.join(".local/share/smolvm")));
        p.installs.clear();
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        assert!(!removed(&plan).contains(&home.join(".local/share/smolvm")));
        assert!(plan
            .removed_roots
            .contains(&home.join(".local/share/smolvm")));
    }

    #[test]
    fn launchers_are_removed_only_when_they_point_into_the_prefix() {
        let home = PathBuf::from("/home/u");
        let mut p = pre(&home);
        p.launchers = vec![
            Launcher {
                path: home.join(".local/bin/smolvm"),
                target: home.join(".smolvm/smolvm"),
                into_prefix: Some(home.join(".smolvm")),
            },
            Launcher {
                path: home.join(".local/bin/smol"),
                target: PathBuf::from("/usr/local/other/smol"),
                into_prefix: None,
            },
        ];
        let plan = build(&p, &opts(ProductChoice::Smolvm));
        let links: Vec<&PathBuf> = plan
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::RemoveLauncher { link, .. } => Some(link),
                _ => None,
            })
            .collect();
        assert_eq!(links, [&home.join(".local/bin/smolvm")]);
        assert!(build(&p, &opts(ProductChoice::Celesto)).steps.is_empty());
    }

    #[test]
    fn celesto_data_dir_aliased_to_smolvm_data_dir_loses_only_celesto_files() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let d = t.path().join("relocated");
        for sub in ["disks", ".local/share/smolvm/server", "snapshots"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        for f in ["celesto.db", "sbx1.log", "notes.txt"] {
            std::fs::write(d.join(f), b"x").unwrap();
        }
        let mut p = pre(&home);
        p.state_dirs = vec![
            dir(Product::Celesto, "data_dir", d.clone()),
            dir(Product::Smolvm, "data_root", d.join(".local/share/smolvm")),
        ];
        let plan = build(&p, &opts(ProductChoice::Celesto));
        let mut r = removed(&plan);
        r.sort();
        assert_eq!(
            r,
            [
                d.join("celesto.db"),
                d.join("disks"),
                d.join("sbx1.log"),
                d.join("snapshots")
            ]
        );
        assert!(!plan.removed_roots.contains(&d));
    }
}
