use super::*;

const NOW: u64 = 1_800_000_000;

fn point(at: u64, celesto: u64, smolvm: u64) -> Point {
    let t = |b: u64| ProductTotals {
        on_disk: b,
        reclaimable: b / 2,
        opt_in: b / 4,
        protected: b / 8,
        held_by_orphans: b / 16,
        orphans: 1,
    };
    Point {
        at,
        products: [(Product::Celesto, t(celesto)), (Product::Smolvm, t(smolvm))].into(),
    }
}

fn run(started_s: u64, freed: Option<u64>) -> RunSummary {
    RunSummary {
        run_id: format!("run{started_s}"),
        plan_id: format!("plan{started_s}"),
        started_at_ms: started_s * 1000,
        home: "/home/u".into(),
        origin: None,
        planned_actions: 1,
        estimated_bytes: 0,
        done: 1,
        skipped: 0,
        failed: 0,
        freed_bytes: freed,
        finished: freed.is_some(),
        outcomes: Vec::new(),
    }
}

#[test]
fn a_year_of_hourly_points_stays_under_the_byte_cap_and_the_point_count() {
    let mut t = Trend::default();
    let start = NOW - 400 * DAY;
    let mut at = start;
    while at <= NOW {
        // Twelve-digit sizes: the longest numbers a real history holds.
        t.record(point(at, 987_654_321_098 + at, 123_456_789_012 + at), at);
        if at.is_multiple_of(DAY) {
            t.note_runs(&[run(at, Some(555_555_555_555))], at);
        }
        at += HOUR;
    }
    let bytes = serde_json::to_vec(&t).unwrap();
    assert!(t.points.len() <= MAX_POINTS, "{}", t.points.len());
    assert!(t.freed.len() <= MAX_POINTS, "{}", t.freed.len());
    // One per hour for a week, one per day for the year before it.
    assert!(
        (7 * 24..=7 * 24 + 366).contains(&t.points.len()),
        "{}",
        t.points.len()
    );
    assert!(t.points.first().unwrap().at >= NOW - YEAR);
    assert!(
        (bytes.len() as u64) < MAX_TREND_BYTES / 2,
        "{} bytes",
        bytes.len()
    );
}

#[test]
fn points_of_one_hour_merge_to_the_latest_and_older_days_keep_one_point() {
    let mut t = Trend::default();
    let hour = NOW / HOUR * HOUR;
    t.record(point(hour + 10, 1, 1), NOW);
    t.record(point(hour + 20, 2, 2), NOW);
    assert_eq!(t.points.len(), 1);
    assert_eq!(t.points[0].at, hour + 20, "a point records its own time");
    assert_eq!(t.points[0].on_disk(), 4);

    // Eight days ago: hourly points of one day fold into that day's latest.
    let day = (NOW - 8 * DAY) / DAY * DAY;
    for h in 0..24 {
        t.record(point(day + h * HOUR, h, 0), NOW);
    }
    let of_day: Vec<_> = t
        .points
        .iter()
        .filter(|p| p.at / DAY == day / DAY)
        .collect();
    assert_eq!(of_day.len(), 1);
    assert_eq!(of_day[0].at, day + 23 * HOUR);
}

#[test]
fn the_hour_to_day_boundary_is_a_week_and_nothing_older_than_a_year_stays() {
    // Two points of one day, one on each side of the week boundary.
    let day = (NOW - WEEK) / DAY * DAY;
    let (old, young) = (day + 1, day + DAY - 1);
    assert!(NOW - old >= WEEK && NOW - young < WEEK);
    let mut t = Trend::default();
    t.record(point(old, 1, 0), NOW);
    t.record(point(young, 2, 0), NOW);
    assert_eq!(t.points.len(), 2, "the young one is still hourly");
    // An hour later both are a week old: one point for the day, the later one.
    t.compact(young + WEEK + HOUR);
    assert_eq!(t.points.len(), 1);
    assert_eq!(t.points[0].at, young);
    // A year later it is gone.
    t.compact(young + YEAR);
    assert!(t.points.is_empty());
}

#[test]
fn freed_runs_are_counted_once_and_summed_within_a_slot() {
    let mut t = Trend::default();
    let h = NOW / HOUR * HOUR;
    let runs = [
        run(h + 1, Some(100)),
        run(h + 2, Some(50)),
        run(h + 3, None),
    ];
    t.note_runs(&runs, NOW);
    t.note_runs(&runs, NOW);
    assert_eq!(
        t.freed,
        [Freed {
            at: h + 2,
            freed_bytes: 150,
            runs: 2
        }]
    );
    // A run that freed nothing (a stop) is no marker.
    t.note_runs(&[run(h + 4, Some(0))], NOW);
    assert_eq!(t.freed.len(), 1);
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_damaged_history_starts_afresh_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(TREND_FILE);
    let good = serde_json::to_string(&Trend {
        points: vec![point(NOW, 1, 2)],
        ..Default::default()
    })
    .unwrap();
    type Make<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Make)> = vec![
        (
            "not a history",
            Box::new(|| std::fs::write(&p, b"\x00garbage").unwrap()),
        ),
        (
            "not a history",
            Box::new(|| std::fs::write(&p, &good[..good.len() / 2]).unwrap()),
        ),
        (
            "schema",
            Box::new(|| std::fs::write(&p, good.replace("trend/1", "trend/9")).unwrap()),
        ),
        (
            "larger than",
            Box::new(|| std::fs::write(&p, vec![b' '; MAX_TREND_BYTES as usize + 1]).unwrap()),
        ),
        ("named pipe", Box::new(|| mkfifo(&p))),
        ("a directory", Box::new(|| std::fs::create_dir(&p).unwrap())),
        (
            "symbolic link",
            Box::new(|| std::os::unix::fs::symlink(d.path().join("elsewhere"), &p).unwrap()),
        ),
    ];
    for (why, make) in cases {
        make();
        let l = load(&p);
        assert_eq!(l.trend, Trend::default(), "{why}");
        let dmg = l.damaged.unwrap_or_else(|| panic!("{why}: no notice"));
        assert!(dmg.to_string().contains(why), "{why}: {dmg}");
        let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir(&p));
    }
    std::fs::write(&p, &good).unwrap();
    let l = load(&p);
    assert_eq!((l.trend.points.len(), l.damaged), (1, None));
    assert_eq!(load(&d.path().join("absent")), Loaded::default());
}

#[test]
fn recording_over_a_damaged_history_keeps_the_journal_and_writes_a_fresh_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(TREND_FILE);
    let j = d.path().join(crate::journal::JOURNAL_FILE);
    let line = serde_json::json!({"event": "plan_started", "at_ms": (NOW - 60) * 1000,
        "plan_id": "p1", "home": "/h", "estimated_bytes": 9, "actions": []});
    let fin = serde_json::json!({"event": "plan_finished", "at_ms": (NOW - 59) * 1000,
        "plan_id": "p1", "done": 1, "skipped": 0, "failed": 0, "estimated_bytes": 9,
        "freed_bytes": 7});
    let journal = format!("{line}\n{fin}\n{{cut");
    std::fs::write(&j, &journal).unwrap();
    std::fs::write(&p, b"{\"schema\":").unwrap();
    let r = record(&p, Some(&j), point(NOW, 5, 6), NOW);
    assert!(r.damaged.is_some());
    assert_eq!(r.error, None);
    assert_eq!(std::fs::read_to_string(&j).unwrap(), journal);
    let l = load(&p);
    assert_eq!(l.damaged, None);
    assert_eq!(l.trend.points, [point(NOW, 5, 6)]);
    assert_eq!(l.trend.freed[0].freed_bytes, 7);

    // A directory in its place: refused, said, nothing panics, the directory stays.
    let dir_p = d.path().join("dir");
    std::fs::create_dir(&dir_p).unwrap();
    let r = record(&dir_p, Some(&j), point(NOW, 1, 1), NOW);
    assert!(r.damaged.is_some() && r.error.is_some(), "{r:?}");
    assert!(dir_p.is_dir());
}

#[test]
fn save_is_atomic_private_and_leaves_no_temporary_file() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("data").join(TREND_FILE);
    let mut t = Trend::default();
    t.record(point(NOW, 1, 2), NOW);
    save(&p, &t).unwrap();
    t.record(point(NOW + HOUR, 3, 4), NOW + HOUR);
    save(&p, &t).unwrap();
    assert_eq!(load(&p).trend, t);
    let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [TREND_FILE]);
    let mode = |q: &Path| std::fs::metadata(q).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p), 0o600);
    assert_eq!(mode(p.parent().unwrap()), 0o700);

    // A rename that fails leaves the old state and no temporary file behind.
    let blocked = d.path().join("blocked");
    std::fs::create_dir_all(blocked.join("inside")).unwrap();
    assert!(save(&blocked, &t).is_err());
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
        "{left:?}"
    );
    assert!(blocked.join("inside").is_dir());
}
