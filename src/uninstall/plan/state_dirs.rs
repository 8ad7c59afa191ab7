//! What the uninstall removes of each product's state: state and cache directories (shared or
//! its own), runtime files, `~/.celesto`, `~/.smolvm` entry by entry, launchers, PATH lines,
//! credentials kept, and the install commands a person runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::model::Product;
use crate::plan::Action;

use crate::install::Install;
use crate::roots::is_system_path;

use crate::uninstall::preflight::{Preflight, SharedDotSmolvm, StateDir, StateKind};

use super::builder::{sort_entries, Builder};
use super::*;

impl Builder<'_> {
    /// Step 4: State and caches, then credentials on request. The CLI calls above may create the
    /// smolvm data and cache roots (every `machine` command opens the database and lock files),
    /// so those are planned whenever a smolvm CLI step is.
    pub(super) fn state_dir_steps(&mut self) {
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
    pub(super) fn state_dir(&mut self, d: &StateDir, created_by_cli: bool) {
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
    pub(super) fn shared_state_dir(&mut self, d: &StateDir, other: &StateDir) {
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
    pub(super) fn own_state_dir(&mut self, d: &StateDir) {
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
    pub(super) fn runtime_file_steps(&mut self) {
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
    pub(super) fn dot_celesto_steps(&mut self) {
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
    pub(super) fn dot_smolvm_steps(&mut self) {
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
    pub(super) fn dot_smolvm_entries(
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
    pub(super) fn launcher_steps(&mut self) {
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
    pub(super) fn path_block_steps(&mut self) {
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
    pub(super) fn keep_credentials(&mut self) {
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
    pub(super) fn install_commands(&mut self) {
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

    pub(super) fn user_command(&mut self, product: Product, command: String, why: String) {
        if !self.user_commands.iter().any(|u| u.command == command) {
            self.user_commands.push(UserCommand {
                product,
                command,
                why,
            });
        }
    }
}

/// The command that removes an install Smolsweep does not remove itself; `None` for those it
/// removes (`~/.smolvm`) or lists with the system files (a system prefix, `/opt/smolvm`).
pub(super) fn install_command(i: &Install, home: &Path) -> Option<String> {
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
pub(super) fn via(source: &str) -> String {
    match source {
        "" | "default" | "legacy" | "system" => String::new(),
        v => format!(" ({v} points there)"),
    }
}

/// A directory a variable (or a default) points at that shows nothing of its product's layout
/// (a `CELESTO_DATA_DIR` at a project): nothing in it is removed, and the plan says why.
pub(super) fn refuse_foreign_dir(
    d: &crate::uninstall::preflight::StateDir,
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
pub(super) fn entry_by_entry(
    pre: &Preflight,
    d: &crate::uninstall::preflight::StateDir,
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
pub(super) fn python_of(path: &Path) -> Option<PathBuf> {
    for anc in path.ancestors() {
        let py = anc.join("bin/python3");
        if anc.join("pyvenv.cfg").exists() && py.exists() {
            return Some(py);
        }
    }
    None
}

/// What its product writes directly in a state directory, by the table of kinds.
pub(super) fn own_entries(d: &StateDir) -> Vec<PathBuf> {
    crate::fsread::read_dir_or_empty(&d.path)
        .into_iter()
        .filter(|e| e.name_str().is_some_and(|n| d.kind.recognises(n)))
        .map(|e| e.path)
        .collect()
}

pub(super) fn size_of(pre: &Preflight, path: &Path) -> u64 {
    // Entry sizes are not measured in the preflight; measure now (read-only).
    let _ = pre;
    crate::size::Sizer::new()
        .measure(path)
        .map(|m| m.allocated)
        .unwrap_or(0)
}
