//! Two small things every room does the same way: read the wall clock in Unix seconds, and take
//! a mutex a panicking thread may have poisoned.

use std::sync::{Mutex, MutexGuard};

/// Seconds since the Unix epoch now (0 for a clock set before it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `m` locked, also after a thread panicked holding it: what it guards is plain data that
/// every writer leaves whole, so a panic elsewhere is no reason to stop.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
