//! User settings, saved as JSON in the platform's app config dir.

use std::path::Path;

use serde::{Deserialize, Serialize};
use smolsweep::model::OptInClass;
use smolsweep::tray::TraySettings;

/// Shortest scan interval a user can choose.
pub const MIN_INTERVAL_SECS: u64 = 60;
/// Longest scan interval (a day).
pub const MAX_INTERVAL_SECS: u64 = 86_400;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Seconds between background scans.
    pub scan_interval_secs: u64,
    /// Notify when new orphans appear and after a reclaim.
    pub notifications: bool,
    /// Start at login.
    pub autostart: bool,
    /// Opt-in classes "Reclaim" includes.
    pub include_opt_in: Vec<OptInClass>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            scan_interval_secs: 900,
            notifications: true,
            autostart: false,
            include_opt_in: vec![],
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
        self
    }

    pub fn tray(&self) -> TraySettings {
        TraySettings {
            include_opt_in: self.include_opt_in.clone(),
        }
    }

    /// Load from `path`; defaults when missing or unreadable.
    pub fn load(path: &Path) -> Settings {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| serde_json::from_str::<Settings>(&s).ok())
            .unwrap_or_default()
            .normalised()
    }

    /// Save atomically (write a sibling, then rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(tmp, path)
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
        }
        .normalised();
        assert_eq!(s.scan_interval_secs, MIN_INTERVAL_SECS);
        assert_eq!(s.include_opt_in, vec![OptInClass::Caches]);
        s.save(&p).unwrap();
        assert_eq!(Settings::load(&p), s);
        std::fs::write(&p, b"{not json").unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
    }
}
