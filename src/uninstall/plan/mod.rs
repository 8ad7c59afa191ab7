//! The uninstall procedure as one reviewable plan: steps in order, each with a summary, a reason
//! and a `checked` flag the user can clear.
//!
//! Built from a [`Preflight`] only (pure): stop and delete machines through the product's CLI,
//! reap this HOME's surviving VM processes, detach macOS mounts, remove each chosen product's
//! state and caches, its install prefix entries and launchers, then what upstream's uninstaller
//! leaves behind. `~/.smolvm` is shared by both products: only the entries of the products being
//! uninstalled are removed, and the directory itself only when nothing else is left in it.
//!
//! Its rooms: this file (the plan as data and its sentences), `builder` (the procedure: machines,
//! processes, mounts, keep rules, records with their directories) and `state_dirs` (each product's
//! state, caches, `~/.celesto`, `~/.smolvm`, launchers, PATH lines and install commands).

mod builder;
mod state_dirs;

pub use builder::build;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{human_bytes, Platform, Product};
use crate::plan::{Action, Plan, PlannedAction, PLAN_SCHEMA};

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

/// The product an uninstall offers first for `pre`: the only one found here (installed, with
/// state, or with machines), else both.
pub fn default_choice(pre: &crate::uninstall::preflight::Preflight) -> ProductChoice {
    let has = |prod: Product| {
        pre.installs.iter().any(|i| i.product == prod)
            || pre.state_dirs.iter().any(|d| d.product == prod && d.exists)
            || pre.machines.iter().any(|m| m.product == prod)
    };
    match (has(Product::Smolvm), has(Product::Celesto)) {
        (true, false) => ProductChoice::Smolvm,
        (false, true) => ProductChoice::Celesto,
        _ => ProductChoice::All,
    }
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
            created_at: crate::basics::now_secs(),
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

    /// What the plan does whatever is ticked: SHA-256 over its canonical JSON with every step
    /// ticked, as every other run's [`Plan::action_digest`]. The window shows a plan with its
    /// digest and sends back the digest and its ticks: a plan made anew since, or edited on the
    /// way, has another digest and does not run.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut all = self.clone();
        for s in &mut all.steps {
            s.checked = true;
        }
        let text = serde_json::to_string(&all).unwrap_or_else(|e| format!("{e}: {all:?}"));
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// The plan with the window's ticks, when `digest` is this plan's ([`Self::digest`]) and
    /// there is one tick per step; `None` otherwise: the plan shown is not this one.
    pub fn with_ticks(&self, digest: &str, checked: &[bool]) -> Option<UninstallPlan> {
        if digest != self.digest() || checked.len() != self.steps.len() {
            return None;
        }
        let mut plan = self.clone();
        for (s, c) in plan.steps.iter_mut().zip(checked) {
            s.checked = *c;
        }
        Some(plan)
    }

    /// What is left in place, as the window lists it: each path with what it is and the
    /// choice that removes it ([`crate::view::uninstall::kept_row`]).
    pub fn kept_rows(&self) -> Vec<crate::view::uninstall::Row> {
        self.kept
            .iter()
            .map(|k| crate::view::uninstall::kept_row(&k.path, &k.what, &k.how))
            .collect()
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
                "{}",
                crate::view::uninstall::kept_line(&k.path, &k.what, &k.how)
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
    use crate::model::Machine;
    use crate::model::Platform;
    use crate::pathblock::PathBlock;
    use crate::uninstall::preflight::{
        Credential, Launcher, SharedDotSmolvm, StateDir, PREFLIGHT_SCHEMA,
    };
    use crate::uninstall::preflight::{Preflight, StateKind};

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

    /// Hazard (issue 30): the wizard's page decided which product to offer first by itself.
    #[test]
    fn the_uninstall_offers_the_only_product_found_first_else_both() {
        let home = Path::new("/h");
        let mut p = pre(home);
        assert_eq!(default_choice(&p), ProductChoice::All);
        p.state_dirs.push(dir(
            Product::Smolvm,
            "data_root",
            home.join(".local/share/smolvm"),
        ));
        assert_eq!(default_choice(&p), ProductChoice::Smolvm);
        p.state_dirs[0].exists = false;
        assert_eq!(default_choice(&p), ProductChoice::All);
        p.state_dirs.push(dir(
            Product::Celesto,
            "data_dir",
            home.join(".local/state/celesto"),
        ));
        assert_eq!(default_choice(&p), ProductChoice::Celesto);
        p.state_dirs[0].exists = true;
        assert_eq!(default_choice(&p), ProductChoice::All);
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
