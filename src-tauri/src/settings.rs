//! User settings, saved as JSON in the platform's app config dir.

use std::path::Path;

use serde::{Deserialize, Serialize};
use smolsweep::model::{OptInClass, Product};
use smolsweep::tray::TraySettings;
use smolsweep::Policy;

/// Shortest scan interval a user can choose.
pub const MIN_INTERVAL_SECS: u64 = 60;
/// Longest scan interval (a day).
pub const MAX_INTERVAL_SECS: u64 = 86_400;
/// The settings file's format. 1: no `version` field (before "accept newer"); 2: adds
/// `accept_newer`; 3: adds the automatic clean-up policy (`auto`, off) and whether its first run
/// was confirmed (`auto_confirmed`). Older files load with the new fields at their defaults.
pub const SETTINGS_VERSION: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The file format ([`SETTINGS_VERSION`]; a file without it is version 1).
    pub version: u32,
    /// Seconds between background scans.
    pub scan_interval_secs: u64,
    /// Notify when new orphans appear and after a reclaim.
    pub notifications: bool,
    /// Start at login.
    pub autostart: bool,
    /// Opt-in classes "Reclaim" includes.
    pub include_opt_in: Vec<OptInClass>,
    /// Products whose installed version is newer than the versions Smolsweep knows, judged
    /// anyway with the newest known rules: the user accepted the risk
    /// (`smolsweep::scan::accept_newer`, the CLI's `--accept-newer`).
    pub accept_newer: Vec<Product>,
    /// Automatic clean-up after scheduled scans (`smolsweep.policy/1`, off by default); also
    /// saved where the systemd user timer reads it (`smolsweep::policy_path`).
    pub auto: Policy,
    /// The policy's first run was shown as a preview and confirmed: later runs go unattended.
    /// Only the shell sets it; turning the policy on again or widening its classes clears it.
    pub auto_confirmed: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            scan_interval_secs: 900,
            notifications: true,
            autostart: false,
            include_opt_in: vec![],
            accept_newer: vec![],
            auto: Policy::default(),
            auto_confirmed: false,
            version: SETTINGS_VERSION,
        }
    }
}

impl Settings {
    /// Clamp values into their ranges and drop duplicate classes.
    pub fn normalised(mut self) -> Settings {
        self.scan_interval_secs = self
            .scan_interval_secs
            .clamp(MIN_INTERVAL_SECS, MAX_INTERVAL_SECS);
        self.include_opt_in.sort();
        self.include_opt_in.dedup();
        self.accept_newer.sort();
        self.accept_newer.dedup();
        self.auto = self.auto.with_defaults();
        self.auto.schema = smolsweep::POLICY_SCHEMA.into();
        self.auto.kinds.sort();
        self.auto.kinds.dedup();
        self.version = SETTINGS_VERSION;
        self
    }

    /// Tell the core which products the user accepted a newer version of (for this process:
    /// every scan and every re-judge after this call). Called whenever settings load or change.
    pub fn apply_accept_newer(&self) {
        let names: Vec<String> = self
            .accept_newer
            .iter()
            .map(|p| product_key(*p).to_string())
            .collect();
        smolsweep::scan::accept_newer(&names);
    }

    pub fn tray(&self) -> TraySettings {
        TraySettings {
            include_opt_in: self.include_opt_in.clone(),
        }
    }

    /// Load from `path`; defaults when missing or unreadable (also when it is not a regular
    /// file or is larger than `smolsweep::MAX_SETTINGS_BYTES`: it is never waited on).
    /// A version-1 file (no `version`) keeps its values; the fields it did not have take their
    /// defaults.
    pub fn load(path: &Path) -> Settings {
        smolsweep::read_input(
            path,
            smolsweep::MAX_SETTINGS_BYTES,
            "settings Smolsweep wrote",
        )
        .ok()
        .and_then(|s| {
            let v: serde_json::Value = serde_json::from_slice(&s).ok()?;
            let mut st = serde_json::from_value::<Settings>(v.clone()).ok()?;
            if v.get("version").is_none() {
                st.version = 1;
            }
            Some(st)
        })
        .unwrap_or_default()
        .normalised()
    }

    /// Save atomically, through the core's write (a new sibling never reached through a link,
    /// synced, renamed over the file).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        smolsweep::write_atomic(path, &bytes, true)
    }
}

/// The name the core and the CLI use for a product (`--accept-newer celesto`).
pub fn product_key(p: Product) -> &'static str {
    match p {
        Product::Celesto => "celesto",
        Product::Smolvm => "smolvm",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_clamp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/settings.json");
        assert_eq!(Settings::load(&p), Settings::default());
        let s = Settings {
            scan_interval_secs: 5,
            notifications: false,
            autostart: true,
            include_opt_in: vec![OptInClass::Caches, OptInClass::Caches],
            accept_newer: vec![Product::Smolvm, Product::Smolvm],
            auto: Policy {
                enabled: true,
                ..Policy::default()
            },
            auto_confirmed: true,
            version: 0,
        }
        .normalised();
        assert_eq!(s.scan_interval_secs, MIN_INTERVAL_SECS);
        assert_eq!(s.include_opt_in, vec![OptInClass::Caches]);
        assert_eq!(s.accept_newer, vec![Product::Smolvm]);
        assert_eq!(s.version, SETTINGS_VERSION);
        s.save(&p).unwrap();
        assert_eq!(Settings::load(&p), s);
        std::fs::write(&p, b"{not json").unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
    }

    /// The old save wrote a fixed `settings.json.tmp` through any link found there, unsynced:
    /// a link planted at that name made the app write its settings over another file. Saving
    /// now goes through the core's atomic write: the planted link and its target are untouched.
    #[test]
    fn saving_settings_never_writes_through_a_link_at_a_temporary_name() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("settings.json.tmp")).unwrap();
        let s = Settings::default();
        s.save(&p).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        assert_eq!(Settings::load(&p), s);
        assert!(std::fs::symlink_metadata(&p).unwrap().file_type().is_file());
    }

    /// Settings that are a named pipe or larger than the cap are never waited on nor read:
    /// the defaults load.
    #[test]
    fn settings_that_are_a_named_pipe_or_too_large_load_as_defaults_without_hanging() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        smolsweep_fixtures::mkfifo(&p).unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
        std::fs::remove_file(&p).unwrap();
        let mut big = br#"{"scan_interval_secs":300}"#.to_vec();
        big.resize(smolsweep::MAX_SETTINGS_BYTES as usize + 1, b' ');
        std::fs::write(&p, &big).unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
        big.truncate(smolsweep::MAX_SETTINGS_BYTES as usize);
        std::fs::write(&p, &big).unwrap();
        assert_eq!(Settings::load(&p).scan_interval_secs, 300);
    }

    /// A version-1 file (before "accept newer") keeps what it said and accepts nothing newer.
    #[test]
    fn a_version_1_file_loads_with_nothing_newer_accepted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        std::fs::write(
            &p,
            br#"{"scan_interval_secs":300,"notifications":false,"autostart":false,"include_opt_in":["caches"]}"#,
        )
        .unwrap();
        let s = Settings::load(&p);
        assert_eq!(s.scan_interval_secs, 300);
        assert!(!s.notifications);
        assert_eq!(s.include_opt_in, vec![OptInClass::Caches]);
        assert!(s.accept_newer.is_empty());
        assert_eq!(
            s.version, SETTINGS_VERSION,
            "saved again as the current format"
        );
        s.save(&p).unwrap();
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("\"version\": 3"));
        assert!(!s.auto.enabled, "automatic clean-up stays off");
    }

    /// A version-2 file (before automatic clean-up) loads with it off and unconfirmed, and a
    /// policy that was saved comes back as the core's schema.
    #[test]
    fn a_version_2_file_loads_with_automatic_clean_up_off() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        std::fs::write(
            &p,
            br#"{"version":2,"scan_interval_secs":600,"accept_newer":["celesto"]}"#,
        )
        .unwrap();
        let s = Settings::load(&p);
        assert_eq!(s.accept_newer, vec![Product::Celesto]);
        assert_eq!(s.auto, Policy::default());
        assert!(!s.auto_confirmed);
        std::fs::write(
            &p,
            br#"{"version":3,"auto":{"schema":"x","enabled":true,"min_age":"2d"},"auto_confirmed":true}"#,
        )
        .unwrap();
        let s = Settings::load(&p);
        assert!(s.auto.enabled && s.auto_confirmed);
        assert_eq!(s.auto.min_age, "2d");
        assert_eq!(s.auto.schema, smolsweep::POLICY_SCHEMA);
        assert_eq!(s.auto.kinds, {
            let mut k = smolsweep::DEFAULT_KINDS.to_vec();
            k.sort();
            k
        });
    }
}
