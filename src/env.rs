//! A snapshot of the environment the roots are resolved from (pure data, so tests can build one).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment a scan resolves its roots from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSnapshot {
    /// `$HOME` (required), exactly as set: its bytes need not be UTF-8.
    pub home: PathBuf,
    /// Every environment variable that was set, with a UTF-8 name and value (a `HOME` that is
    /// not UTF-8 is only in [`EnvSnapshot::home`]).
    pub vars: BTreeMap<String, String>,
    /// Effective uid.
    pub euid: u32,
    /// Home directory of `$SUDO_USER` when running under sudo (from the password database).
    pub sudo_home: Option<PathBuf>,
}

/// Variables that decide a path Smolsweep or a product uses, besides `HOME`: every variable
/// with one of these prefixes, and the names in [`PATH_VARIABLES`]. One whose value is not
/// UTF-8 is refused by [`EnvSnapshot::capture`] rather than dropped: without it the scan would
/// look in a default directory the user did not mean (and `prune` clean there).
const PATH_PREFIXES: &[&str] = &["XDG_", "SMOLVM_", "CELESTO_", "SMOLSWEEP_", "HOMEBREW_"];
/// See [`PATH_PREFIXES`]: `PATH` finds the product CLIs, `TMPDIR` their temporary trees, and
/// `SUDO_USER`/`SUDO_UID` whose HOME a run under sudo is about.
const PATH_VARIABLES: &[&str] = &["PATH", "TMPDIR", "SUDO_USER", "SUDO_UID"];

/// Whether the variable `name` decides a path ([`PATH_PREFIXES`], [`PATH_VARIABLES`]).
fn decides_paths(name: &str) -> bool {
    PATH_VARIABLES.contains(&name) || PATH_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Why the environment cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A variable that decides a path (named here) is not valid UTF-8.
    #[error("the environment variable {0} is not valid UTF-8: Smolsweep cannot read it as the products would, and will not guess another directory; fix or unset it")]
    NotUtf8(String),
    /// `HOME` is unset or empty and the effective user has no password database entry.
    #[error("HOME is not set and the user has no password database entry")]
    NoHome,
}

impl EnvSnapshot {
    /// Capture the current process environment.
    ///
    /// `HOME` is taken as the bytes it is, never replaced while it is set and not empty; it falls
    /// back to the password database entry of the effective user only when it is unset or
    /// empty. Other variables are kept when their name and value are UTF-8; one that decides a
    /// path ([`PATH_PREFIXES`], [`PATH_VARIABLES`]) with a value that is not UTF-8 is an error
    /// naming it ([`EnvError::NotUtf8`]), so nothing runs on a directory the user did not mean.
    /// `sudo_home` is looked up whenever `SUDO_USER` names a user other than `root`; whether the
    /// process really runs under sudo (effective uid 0) is decided by the callers.
    pub fn capture() -> Result<Self, EnvError> {
        let mut vars = BTreeMap::new();
        let mut home_os = None;
        for (k, v) in std::env::vars_os() {
            let Ok(k) = k.into_string() else { continue };
            if k == "HOME" {
                home_os = Some(v.clone());
            }
            match v.into_string() {
                Ok(v) => {
                    vars.insert(k, v);
                }
                Err(_) if k != "HOME" && decides_paths(&k) => return Err(EnvError::NotUtf8(k)),
                Err(_) => {}
            }
        }
        let euid = rustix::process::geteuid().as_raw();
        let home = match home_os.filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h),
            None => nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(euid))
                .ok()
                .flatten()
                .map(|u| u.dir)
                .ok_or(EnvError::NoHome)?,
        };
        let sudo_home = sudo_user(&vars).and_then(|name| {
            nix::unistd::User::from_name(name)
                .ok()
                .flatten()
                .map(|u| u.dir)
        });
        Ok(EnvSnapshot {
            home,
            vars,
            euid,
            sudo_home,
        })
    }

    /// `$SUDO_USER` when it names a user other than `root` (what Celesto calls a usable
    /// sudo user; the password database lookup is [`EnvSnapshot::sudo_home`]).
    pub(crate) fn sudo_user(&self) -> Option<&str> {
        sudo_user(&self.vars)
    }

    /// Running under sudo as Celesto defines it: effective uid 0, `SUDO_USER` set to a user other
    /// than `root`, and that user found in the password database.
    pub(crate) fn under_sudo(&self) -> bool {
        self.euid == 0 && self.sudo_user().is_some() && self.sudo_home.is_some()
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

    /// `~` and `~/...` expanded against [`EnvSnapshot::home`], like Python's `expanduser()`.
    /// `~user/...` is left as written (it would need a password database lookup).
    pub(crate) fn expand_user(&self, path: &str) -> PathBuf {
        if path == "~" {
            self.home.clone()
        } else if let Some(rest) = path.strip_prefix("~/") {
            self.home.join(rest.trim_start_matches('/'))
        } else {
            PathBuf::from(path)
        }
    }

    /// Where Celesto puts its sockets and launcher configs: `/tmp` on both platforms.
    /// `SMOLSWEEP_SOCKET_DIR` overrides it (tests use a scratch directory).
    pub fn socket_dir(&self) -> PathBuf {
        self.var("SMOLSWEEP_SOCKET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    }
}

fn sudo_user(vars: &BTreeMap<String, String>) -> Option<&str> {
    vars.get("SUDO_USER")
        .map(|s| s.as_str())
        .filter(|u| !u.is_empty() && *u != "root")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_reads_home_and_euid_of_this_process() {
        let snap = EnvSnapshot::capture().unwrap();
        assert_eq!(snap.euid, rustix::process::geteuid().as_raw());
        match std::env::var("HOME") {
            Ok(h) if !h.is_empty() => assert_eq!(snap.home, PathBuf::from(h)),
            _ => assert!(snap.home.is_absolute()),
        }
        if let Ok(path) = std::env::var("PATH") {
            assert_eq!(snap.vars.get("PATH"), Some(&path));
        }
    }

    #[test]
    fn blank_variables_read_as_unset() {
        let snap = EnvSnapshot::from_pairs("/h", [("A", "  "), ("B", ""), ("C", " x ")]);
        assert_eq!(snap.var("A"), None);
        assert_eq!(snap.var("B"), None);
        assert_eq!(snap.var("C"), Some(" x "));
        assert_eq!(snap.var("D"), None);
    }

    #[test]
    fn expand_user_like_python() {
        let snap = EnvSnapshot::from_pairs("/home/u", Vec::<(String, String)>::new());
        assert_eq!(snap.expand_user("~"), PathBuf::from("/home/u"));
        assert_eq!(snap.expand_user("~/x/y"), PathBuf::from("/home/u/x/y"));
        assert_eq!(snap.expand_user("~other/x"), PathBuf::from("~other/x"));
        assert_eq!(snap.expand_user("/abs"), PathBuf::from("/abs"));
    }

    #[test]
    fn sudo_needs_root_euid_a_non_root_user_and_a_home() {
        let mut snap = EnvSnapshot::from_pairs("/root", [("SUDO_USER", "alice")]);
        snap.sudo_home = Some(PathBuf::from("/home/alice"));
        assert!(!snap.under_sudo(), "euid 1000 is not sudo");
        snap.euid = 0;
        assert!(snap.under_sudo());
        snap.vars.insert("SUDO_USER".into(), "root".into());
        assert!(!snap.under_sudo(), "SUDO_USER=root is direct root");
        snap.vars.insert("SUDO_USER".into(), "alice".into());
        snap.sudo_home = None;
        assert!(!snap.under_sudo(), "unknown sudo user is direct root");
    }
}

/// The local time zone: its offset from UTC at an instant (an offset can differ by date). The
/// view words every time through the zone it is given and reads none itself.
pub trait Zone {
    /// The offset from UTC at `secs` since the epoch; `None` when it cannot be told.
    fn offset_at(&self, secs: i64) -> Option<chrono::FixedOffset>;
}

/// One offset at every instant (tests, and anyone who already knows theirs).
impl Zone for chrono::FixedOffset {
    fn offset_at(&self, _secs: i64) -> Option<chrono::FixedOffset> {
        Some(*self)
    }
}

/// This process's zone as the C library reads it (`TZ`, else /etc/localtime): `localtime_r`'s
/// `tm_gmtoff`. chrono's own `Local` reads the zone through `iana-time-zone`, which on macOS
/// links CoreFoundation: the CLI needs only libSystem there.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemZone;

impl Zone for SystemZone {
    fn offset_at(&self, secs: i64) -> Option<chrono::FixedOffset> {
        let t: libc::time_t = secs;
        // SAFETY: an all-zero `tm` is a valid value; `localtime_r` fills it.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to a time_t and a tm owned here; `localtime_r` keeps neither.
        if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
            return None;
        }
        chrono::FixedOffset::east_opt(i32::try_from(tm.tm_gmtoff).ok()?)
    }
}
