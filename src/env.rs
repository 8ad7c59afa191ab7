//! A snapshot of the environment the roots are resolved from (pure data, so tests can build one).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment a scan resolves its roots from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSnapshot {
    /// `$HOME` (required).
    pub home: PathBuf,
    /// Every environment variable that was set.
    pub vars: BTreeMap<String, String>,
    /// Effective uid.
    pub euid: u32,
    /// Home directory of `$SUDO_USER` when running under sudo (from the password database).
    pub sudo_home: Option<PathBuf>,
}

impl EnvSnapshot {
    /// Capture the current process environment.
    pub fn capture() -> anyhow::Result<Self> {
        todo!("env: capture")
    }

    /// A snapshot with the given HOME and variables (for tests and fixtures).
    pub fn from_pairs<I, K, V>(home: impl Into<PathBuf>, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        EnvSnapshot {
            home: home.into(),
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            euid: 1000,
            sudo_home: None,
        }
    }

    /// A variable's value when set and not blank.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(|s| s.as_str())
            .filter(|s| !s.trim().is_empty())
    }

    /// Where Celesto puts its sockets and launcher configs: `/tmp` on both platforms.
    /// `SMOLSWEEP_SOCKET_DIR` overrides it (tests use a scratch directory).
    pub fn socket_dir(&self) -> PathBuf {
        self.var("SMOLSWEEP_SOCKET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    }
}
