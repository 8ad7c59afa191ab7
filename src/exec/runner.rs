//! The real [`ActionRunner`]: machines through their product's CLI ([`super::machines`]),
//! processes through pidfds ([`super::reap`]), macOS disk images through `hdiutil`
//! ([`super::detach`]).

use std::path::{Path, PathBuf};

use crate::env::EnvSnapshot;
use crate::exec::detach::{self, DetachOutcome, SystemRunner};
use crate::exec::machines::{
    celesto_row, smolvm_record_state, CelestoCli, MachineOutcome, SmolvmCli,
};
use crate::exec::reap::{self, ProcessRef, ReapOptions, ReapOutcome};
use crate::exec::{ActionRunner, Outcome};
use crate::inventory::smolvm::{read_smolvm_db, SmolvmRecord};
use crate::model::{Platform, Product};
use crate::roots::{celesto_roots, smolvm_roots};

/// Carries out machine, process and mount actions for one HOME.
#[derive(Debug, Clone)]
pub struct RealRunner {
    /// The environment the product CLIs run with.
    pub env: EnvSnapshot,
    /// The platform (which tools detach mounts and list processes).
    pub platform: Platform,
    /// How long a reaped process gets after SIGTERM, then after SIGKILL.
    pub reap: ReapOptions,
    /// The CLI to use per product instead of the one found on PATH (an uninstall runs the
    /// install it removes).
    pub clis: Vec<(Product, PathBuf)>,
    /// How long a product CLI may take before its process group is killed.
    pub cli_timeout: std::time::Duration,
}

impl RealRunner {
    /// The runner for one HOME's `env` on `platform`, with the default reap graces and CLI timeout; each product's CLI is found on that environment's PATH when an action needs it.
    pub fn new(env: EnvSnapshot, platform: Platform) -> Self {
        RealRunner {
            env,
            platform,
            reap: ReapOptions::default(),
            clis: Vec::new(),
            cli_timeout: crate::exec::machines::DEFAULT_CLI_TIMEOUT,
        }
    }

    /// Use `cli` for `product`'s machine commands.
    pub(crate) fn with_cli(mut self, product: Product, cli: PathBuf) -> Self {
        self.clis.retain(|(p, _)| *p != product);
        self.clis.push((product, cli));
        self
    }

    fn cli_override(&self, product: Product) -> Option<&PathBuf> {
        self.clis
            .iter()
            .find(|(p, _)| *p == product)
            .map(|(_, c)| c)
    }

    /// Every variable of the environment, HOME included (for a CLI that is not on PATH).
    fn full_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let mut v: Vec<(std::ffi::OsString, std::ffi::OsString)> = self
            .env
            .vars
            .iter()
            .filter(|(k, _)| k.as_str() != "HOME" && !k.is_empty())
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        v.push(("HOME".into(), self.env.home.clone().into_os_string()));
        v
    }

    /// The VMM processes booting the smolvm machine `name` (by its machine directory hash).
    fn vmms_of_machine(&self, name: &str) -> Vec<ProcessRef> {
        let hash = crate::inventory::smolvm::vm_dir_hash(name);
        let procs = crate::procs::list();
        crate::procs::shape::detect_all(&procs)
            .into_iter()
            .filter(|(_, s)| match s {
                crate::procs::shape::VmmShape::SmolvmBootVm { vm_dir, .. } => {
                    vm_dir.file_name().and_then(|n| n.to_str()) == Some(hash.as_str())
                }
                _ => false,
            })
            .map(|(p, _)| ProcessRef {
                pid: p.pid,
                start_time: p.start_time,
                uid: p.uid,
            })
            .collect()
    }

    /// The database (of this environment's root sets) that records `name`.
    fn smolvm_db_for(&self, name: &str) -> Result<PathBuf, Outcome> {
        let sets = smolvm_roots(self.platform, &self.env).sets;
        sets.iter()
            .map(|s| s.db_path.clone())
            .find(|db| matches!(smolvm_record_state(db, name), Ok(Some(_))))
            // Never call the CLI with a name that has no record: `stop` creates directories.
            .ok_or_else(|| {
                Outcome::skipped(format!(
                    "machine '{name}' no longer exists; the CLI was not called"
                ))
            })
    }

    /// The smolvm CLI for the root set whose database records `name`.
    fn smolvm_for(&self, name: &str) -> Result<SmolvmCli, Outcome> {
        let db = self.smolvm_db_for(name)?;
        let chosen = self.cli_override(Product::Smolvm);
        // The install's own CLI (an uninstall) runs with the whole audited environment when
        // none is found on PATH.
        let mut cli = match (SmolvmCli::locate(&self.env, db.clone()), chosen) {
            (Some(c), _) => c,
            (None, Some(program)) => SmolvmCli {
                program: program.clone(),
                env: self.full_env(),
                timeout: self.cli_timeout,
                db,
            },
            (None, None) => {
                return Err(Outcome::failed("the smolvm command was not found on PATH"))
            }
        };
        if let Some(p) = chosen {
            cli.program = p.clone();
        }
        cli.timeout = self.cli_timeout;
        Ok(cli)
    }

    /// The celesto CLI for the data directory whose inventory holds `id`.
    fn celesto_for(&self, id: &str) -> Result<CelestoCli, Outcome> {
        let dirs = celesto_roots(self.platform, &self.env).data_dirs;
        let db: Option<PathBuf> = dirs
            .iter()
            .flat_map(|d| crate::upstream::inventory_paths(Product::Celesto, &d.path))
            .find(|db| matches!(celesto_row(db, id), Ok(Some(_))));
        let Some(db) = db else {
            return Err(Outcome::skipped(format!(
                "sandbox '{id}' no longer exists; the CLI was not called"
            )));
        };
        let chosen = self.cli_override(Product::Celesto);
        // The install's own CLI (an uninstall) runs with the whole audited environment when
        // none is found on PATH.
        let mut cli = match (CelestoCli::locate(&self.env, db.clone()), chosen) {
            (Some(c), _) => c,
            (None, Some(program)) => CelestoCli {
                program: program.clone(),
                env: self.full_env(),
                timeout: self.cli_timeout,
                db,
            },
            (None, None) => {
                return Err(Outcome::failed("the celesto command was not found on PATH"))
            }
        };
        if let Some(p) = chosen {
            cli.program = p.clone();
        }
        cli.timeout = self.cli_timeout;
        Ok(cli)
    }
}

/// `Err(why)` unless the machines branched from `name` now (directly or through a branch) are
/// exactly what the plan named: none without `--cascade`, and with it none the user was not shown.
pub(crate) fn branches_as_planned(
    records: &[SmolvmRecord],
    name: &str,
    cascade: bool,
    planned: &[String],
) -> Result<(), String> {
    let mut now: Vec<&str> = Vec::new();
    let mut parents = vec![name];
    while let Some(parent) = parents.pop() {
        for r in records {
            if r.golden.as_deref() == Some(parent) && r.name != name && !now.contains(&&*r.name) {
                now.push(&r.name);
                parents.push(&r.name);
            }
        }
    }
    now.sort_unstable();
    if now.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(format!(
            "machines were branched from '{name}' since the plan ({}); deleting it would delete them too, so it was not deleted",
            now.join(", ")
        ));
    }
    let unplanned: Vec<&str> = now
        .into_iter()
        .filter(|n| !planned.iter().any(|p| p == n))
        .collect();
    if unplanned.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "machines were branched from '{name}' since the plan ({}); --cascade would delete them unseen, so it was not deleted",
            unplanned.join(", ")
        ))
    }
}

fn machine_outcome(verb: &str, name: &str, o: MachineOutcome) -> Outcome {
    match o {
        MachineOutcome::Stopped => Outcome::done(format!("stopped {name}")),
        MachineOutcome::Deleted => Outcome::done(format!("Deleted machine: {name}")),
        MachineOutcome::Resumed => Outcome::done(format!("resumed {name}")),
        MachineOutcome::NotRunning { state } => {
            if verb == "stop" {
                Outcome::done(format!("{name} was not running ({state})"))
            } else {
                Outcome::skipped(format!("{name} is {state}"))
            }
        }
        MachineOutcome::Paused => Outcome::skipped(format!(
            "{name} is paused (its execution is saved): resume it, or delete it"
        )),
        MachineOutcome::NotFound => Outcome::skipped(format!("{name} no longer exists")),
        MachineOutcome::FsSyncFailed => Outcome::skipped(format!(
            "the guest of {name} could not sync its file system, so it was not stopped; deleting it ends its VM process first"
        )),
        other => Outcome::failed(format!("{verb} {name}: {}", failure_sentence(&other))),
    }
}

/// Why a product CLI's run did not do what was asked, as a sentence.
fn failure_sentence(o: &MachineOutcome) -> String {
    let first = |s: &str| {
        s.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    };
    match o {
        MachineOutcome::CliMissing => {
            "the product's command was not found, so nothing was run".into()
        }
        MachineOutcome::TimedOut => "its command did not finish in time and was ended".into(),
        MachineOutcome::InvalidName { name } => {
            format!("'{name}' is not a name the product accepts, so nothing was run")
        }
        MachineOutcome::PidNotVerified { pid } => format!(
            "its recorded process {pid} could not be confirmed as its VM, so nothing was run"
        ),
        MachineOutcome::InventoryUnreadable { error } => {
            format!("its record could not be read ({error}), so nothing was run")
        }
        MachineOutcome::Unexpected {
            code,
            stdout,
            stderr,
        } => {
            let said = match (first(stderr), first(stdout)) {
                (e, _) if !e.is_empty() => format!(": \"{e}\""),
                (_, o) if !o.is_empty() => format!(": \"{o}\""),
                _ => String::new(),
            };
            let code = code.map_or("was killed".to_string(), |c| format!("exited {c}"));
            format!("its command {code} with an answer Smolsweep does not know{said}; nothing is assumed")
        }
        other => format!("{other:?}"),
    }
}

impl RealRunner {
    /// Hazard 22: the guest could not sync its file system, so `delete` refused. End the
    /// machine's VM process (death confirmed), then delete again.
    fn delete_after_fs_sync_failure(&self, cli: &SmolvmCli, name: &str, cascade: bool) -> Outcome {
        let vmms = self.vmms_of_machine(name);
        let Some(vmm) = vmms.first() else {
            return Outcome::failed(format!(
                "the guest of {name} could not sync its file system and no VM process of this machine was found to end"
            ));
        };
        match cli.delete_after_reap(name, vmm, cascade, &self.reap) {
            (_, Some(o)) => machine_outcome("delete", name, o),
            (ReapOutcome::AlreadyGone, None) => Outcome::failed(format!(
                "the guest of {name} could not sync its file system and its VM process was already gone"
            )),
            (r, None) => Outcome::failed(format!(
                "the guest of {name} could not sync its file system and its VM process could not be ended: {r:?}"
            )),
        }
    }
}

impl ActionRunner for RealRunner {
    fn stop_machine(
        &self,
        product: Product,
        name: &str,
        pid: Option<u32>,
        pid_start_time: Option<u64>,
    ) -> Outcome {
        match product {
            Product::Smolvm => match self.smolvm_for(name) {
                Ok(cli) => machine_outcome("stop", name, cli.stop(name)),
                Err(o) => o,
            },
            Product::Celesto => match self.celesto_for(name) {
                Ok(cli) => {
                    let proc_ref = pid.zip(pid_start_time).map(|(pid, start_time)| ProcessRef {
                        pid,
                        start_time,
                        uid: self.env.euid,
                    });
                    machine_outcome("stop", name, cli.stop(name, proc_ref.as_ref()))
                }
                Err(o) => o,
            },
        }
    }

    fn delete_machine(
        &self,
        product: Product,
        name: &str,
        cascade: bool,
        children: &[String],
        process: Option<(u32, u64)>,
    ) -> Outcome {
        match product {
            Product::Smolvm => {
                // The branches are re-read: a machine branched since the plan would go with it.
                let checked = self.smolvm_db_for(name).and_then(|db| {
                    let records = read_smolvm_db(&db).map_err(|e| {
                        Outcome::skipped(format!(
                            "cannot verify which machines are branched from '{name}': {e}"
                        ))
                    })?;
                    branches_as_planned(&records, name, cascade, children).map_err(Outcome::skipped)
                });
                match checked.and_then(|()| self.smolvm_for(name)) {
                    Ok(cli) => match cli.delete(name, cascade) {
                        MachineOutcome::FsSyncFailed => {
                            self.delete_after_fs_sync_failure(&cli, name, cascade)
                        }
                        o => machine_outcome("delete", name, o),
                    },
                    Err(o) => o,
                }
            }
            Product::Celesto => match self.celesto_for(name) {
                Ok(cli) => {
                    let proc_ref = process.map(|(pid, start_time)| ProcessRef {
                        pid,
                        start_time,
                        uid: self.env.euid,
                    });
                    machine_outcome("delete", name, cli.delete(name, proc_ref.as_ref()))
                }
                Err(o) => o,
            },
        }
    }

    fn reap(
        &self,
        pid: u32,
        start_time: u64,
        _product: Product,
        owner: Option<&str>,
        uid: u32,
    ) -> Outcome {
        let who = owner.map(|o| format!(" ({o})")).unwrap_or_default();
        if uid != self.env.euid {
            return Outcome::skipped(format!("process {pid}{who} belongs to another user"));
        }
        let target = ProcessRef {
            pid,
            start_time,
            uid,
        };
        match reap::reap(&target, &self.reap) {
            ReapOutcome::Terminated { by, after_ms } => Outcome::done(format!(
                "process {pid}{who} ended by {by:?} after {after_ms} ms"
            )),
            ReapOutcome::AlreadyGone => {
                Outcome::done(format!("process {pid}{who} had already exited"))
            }
            ReapOutcome::IdentityMismatch { .. } => Outcome::skipped(format!(
                "pid {pid} now belongs to another process; nothing was signalled"
            )),
            ReapOutcome::NotOurs { uid } => Outcome::skipped(format!(
                "process {pid} belongs to uid {uid}; nothing was signalled"
            )),
            ReapOutcome::StillAlive => {
                Outcome::failed(format!("process {pid}{who} survived SIGKILL"))
            }
            ReapOutcome::Failed { error } => Outcome::failed(error),
        }
    }

    fn detach(&self, mountpoint: &Path) -> Outcome {
        if self.platform != Platform::Macos {
            return Outcome::skipped(format!(
                "{} is a mount point; Smolsweep never detaches mounts on Linux",
                mountpoint.display()
            ));
        }
        let runner = SystemRunner {
            path: self.env.var("PATH").map(std::ffi::OsString::from),
            env: self.full_env(),
            timeout: self.cli_timeout,
        };
        match detach::detach(mountpoint, &runner) {
            DetachOutcome::Detached { forced: false, .. } => {
                Outcome::done(format!("detached {}", mountpoint.display()))
            }
            DetachOutcome::Detached {
                forced: true,
                first_error,
            } => Outcome::done(format!(
                "detached {} with -force (first: {})",
                mountpoint.display(),
                first_error.unwrap_or_default()
            )),
            DetachOutcome::Failed { error } => Outcome::failed(format!(
                "could not detach {}: {error}; what contains it is left in place",
                mountpoint.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, golden: Option<&str>) -> SmolvmRecord {
        SmolvmRecord {
            name: name.into(),
            state: "stopped".into(),
            pid: None,
            pid_start_time: None,
            ephemeral: false,
            created_at: None,
            golden: golden.map(String::from),
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn branches_must_be_exactly_the_planned_ones() {
        let plain = [rec("base", None), rec("other", Some("elsewhere"))];
        assert_eq!(branches_as_planned(&plain, "base", false, &[]), Ok(()));

        let family = [
            rec("base", None),
            rec("kid", Some("base")),
            rec("grandkid", Some("kid")),
        ];
        let planned = ["grandkid".to_string(), "kid".to_string()];
        assert_eq!(branches_as_planned(&family, "base", true, &planned), Ok(()));
        // Branches that appeared since a plan without cascade.
        let e = branches_as_planned(&family, "base", false, &[]).unwrap_err();
        assert!(e.contains("grandkid, kid"), "{e}");
        // A branch the plan did not name (a branch of a branch included).
        let e = branches_as_planned(&family, "base", true, &planned[1..]).unwrap_err();
        assert!(e.contains("grandkid") && !e.contains("kid,"), "{e}");
    }
}
