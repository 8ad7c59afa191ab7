//! Local time in the zone the caller gives ([`crate::env::Zone`]; the system's is
//! [`crate::env::SystemZone`]), on chrono's clock-free types: the view reads no zone itself.

use chrono::{DateTime, FixedOffset};

use crate::env::Zone;

/// `secs` since the epoch in `zone`; `None` when the zone cannot convert it.
pub fn local_time(secs: i64, zone: &dyn Zone) -> Option<DateTime<FixedOffset>> {
    let offset = zone.offset_at(secs)?;
    Some(DateTime::from_timestamp(secs, 0)?.with_timezone(&offset))
}

/// `ms` since the epoch as every History shows it: `2026-12-03 04:36:22 +00:00`, in `zone` (the
/// system's: `TZ`, else /etc/localtime), as `smolsweep history` prints it.
pub fn history_time(ms: u64, zone: &dyn Zone) -> String {
    match local_time((ms / 1000) as i64, zone) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S %:z").to_string(),
        None => format!("{ms} ms after the epoch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_instant_with_the_offset_of_the_zone_given() {
        let zone = FixedOffset::east_opt(5 * 3600 + 30 * 60).unwrap();
        let t = local_time(1_796_115_907, &zone).unwrap();
        assert_eq!(t.timestamp(), 1_796_115_907);
        assert_eq!(t.offset().local_minus_utc(), 5 * 3600 + 30 * 60);
        assert_eq!(
            history_time(1_796_115_907_000, &zone),
            t.format("%Y-%m-%d %H:%M:%S +05:30").to_string()
        );
    }

    #[test]
    fn the_systems_zone_gives_whole_minutes_within_a_day() {
        // Whatever zone the tests run in, the offset is a whole number of minutes within a day.
        let t = local_time(1_796_115_907, &crate::env::SystemZone).unwrap();
        assert_eq!(t.timestamp(), 1_796_115_907);
        let off = t.offset().local_minus_utc();
        assert!(off.abs() < 24 * 3600 && off % 60 == 0, "{off}");
    }
}
