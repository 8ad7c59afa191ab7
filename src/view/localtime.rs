//! Local time as the C library converts it: `localtime_r`'s UTC offset (`TZ`, else
//! /etc/localtime) on chrono's clock-free types. chrono's own `Local` reads the zone through
//! `iana-time-zone`, which on macOS links CoreFoundation: the CLI needs only libSystem there.

use chrono::{DateTime, FixedOffset};

/// `secs` since the epoch in the local time zone; `None` when the C library cannot convert it.
pub fn local_time(secs: i64) -> Option<DateTime<FixedOffset>> {
    let offset = utc_offset(secs)?;
    Some(DateTime::from_timestamp(secs, 0)?.with_timezone(&offset))
}

/// The local zone's offset from UTC at `secs` since the epoch (`tm_gmtoff`).
fn utc_offset(secs: i64) -> Option<FixedOffset> {
    let t: libc::time_t = secs;
    // SAFETY: an all-zero `tm` is a valid value; `localtime_r` fills it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm owned here; `localtime_r` keeps neither.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return None;
    }
    FixedOffset::east_opt(i32::try_from(tm.tm_gmtoff).ok()?)
}

/// `ms` since the epoch as every History shows it: `2026-12-03 04:36:22 +00:00`, in the local
/// time zone (`TZ`, else /etc/localtime), as `smolsweep history` prints it.
pub fn history_time(ms: u64) -> String {
    match local_time((ms / 1000) as i64) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S %:z").to_string(),
        None => format!("{ms} ms after the epoch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_instant_with_the_offset_of_this_process_zone() {
        let t = local_time(1_796_115_907).unwrap();
        assert_eq!(t.timestamp(), 1_796_115_907);
        // Whatever zone the tests run in, the offset is a whole number of minutes within a day.
        let off = t.offset().local_minus_utc();
        assert!(off.abs() < 24 * 3600 && off % 60 == 0, "{off}");
    }
}
