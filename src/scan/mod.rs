//! The scan: roots → inventories → processes → findings with verdicts and reasons.

use std::time::{Duration, SystemTime};

use crate::env::EnvSnapshot;
use crate::model::{Platform, ScanReport};

/// What a scan looks at.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub env: EnvSnapshot,
    pub platform: Platform,
    /// A machine directory younger than this is never called dangling (a create may be under way).
    pub age_guard: Duration,
    pub now: SystemTime,
}

impl ScanOptions {
    /// Options for this process's own environment and platform.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(ScanOptions {
            env: EnvSnapshot::capture()?,
            platform: Platform::current(),
            age_guard: Duration::from_secs(120),
            now: SystemTime::now(),
        })
    }
}

/// Scan everything both products leave behind. Read-only: writes nothing, changes no timestamp.
pub fn scan(_opts: &ScanOptions) -> ScanReport {
    todo!("scan")
}
