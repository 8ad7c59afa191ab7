//! Where the uninstall looks and what carries it out: the live system, or a test's scratch HOME.

use smolsweep::env::EnvSnapshot;
use smolsweep::exec::ActionRunner;
use smolsweep::model::Platform;
use smolsweep::uninstall::run as urun;
use smolsweep::uninstall::UninstallPlan;

/// Where the uninstall looks and what carries it out. The real one uses the process
/// environment, the live system and the journal; tests give a scratch HOME and their own
/// journal file.
pub trait Uninstaller: Send + Sync + 'static {
    /// The user environment to uninstall from.
    fn env(&self) -> anyhow::Result<EnvSnapshot> {
        Ok(EnvSnapshot::capture()?)
    }
    fn platform(&self) -> Platform {
        Platform::current()
    }
    /// Machine, process and mount actions (the CLIs of the installs being removed).
    fn runner(&self, plan: &UninstallPlan, env: &EnvSnapshot) -> Box<dyn ActionRunner> {
        Box::new(urun::runner_for(plan, env, self.platform()))
    }
    /// The journal every action is recorded in (`None`: the same one as `prune` and
    /// `uninstall`).
    fn journal_path(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// What re-judges each step at the moment it runs: the scanner, in `env`.
    fn judge(&self, env: &EnvSnapshot) -> Box<dyn smolsweep::exec::Judge> {
        Box::new(smolsweep::exec::Rejudge::new(
            smolsweep::scan::ScanOptions {
                env: env.clone(),
                platform: self.platform(),
                age_guard: std::time::Duration::from_secs(120),
                now: std::time::SystemTime::now(),
            },
        ))
    }
}

/// The core on the live system.
#[derive(Debug, Default)]
pub struct RealUninstaller;
impl Uninstaller for RealUninstaller {}
