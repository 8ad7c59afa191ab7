//! Issue 11: cost of the app's incremental rescan against a full scan of the same HOME, in one
//! process, alternating.
//!
//! `cargo run --release --example measure_rescan -- HOME [RUNS] [--no-procs] [--rescans-only N]`
//!
//! `--rescans-only N`: after the two memo scans below, only N rescans with nothing changed,
//! 30 ms apart (for a profiler: `perf record -g -- measure_rescan HOME 1 --rescans-only 150`).
//!
//! `--no-procs`: both scans are given an empty process table instead of reading this machine's,
//! so the figures are the walk's alone (issue 20: a machine whose table is large hides it).
//!
//! Each round times, in this order: a full fresh scan (`scan::scan`), a memo rescan with
//! nothing changed (twice: right after the full scan, and again), and a memo rescan after one new orphan (a new `_shared` store holding a
//! 4 MiB disk, removed again before the next round). Both scans read the process table, the
//! roots and the inventories; only the walk differs. Prints medians (wall time, and CPU time of
//! the process, every thread, for the full scan and the first rescan) and ratios to the full scan,
//! and checks every rescan's findings equal a full scan's. Also prints how many files a rescan
//! with nothing changed stat'ed again (large, sparse or multiply linked: issue 20), the judges'
//! listings it kept and read (issue 40), and how many processes it took from the process
//! table's memo and read in full (issue 20).
//!
//! Then (issue 32) a memo rescan after two VMs wrote their disks for longer than the memo's
//! inotify queue holds: two files in two `_shared` stores written in place in turn, 4 KiB at a
//! time, `fs.inotify.max_queued_events` + 1000 times each (an hour of two VMs writing queues
//! far more than that; with one event per write the queue overflowed after about 7 minutes and
//! the rescan walked everything). Printed as `rescan_after_writers_ms` and its ratio, with the
//! directories it read.
//!
//! Before the rounds, two memo scans stand for the app having run a while: the first reads
//! everything, the second still the whole process table (the first met every directory new).

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use smolsweep::env::EnvSnapshot;
use smolsweep::model::Platform;
use smolsweep::scan::memo::{scan_with_memo, scan_with_memo_and, ScanMemo};
use smolsweep::scan::{scan, scan_with, ScanOptions};

/// CPU time (user + system) of this process so far, all threads.
fn cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Wall and CPU time of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (t, c) = (Instant::now(), cpu());
    let out = f();
    (out, t.elapsed(), cpu() - c)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let home = PathBuf::from(args.next().expect("usage: measure_rescan HOME [RUNS]"));
    let runs: usize = args
        .next()
        .and_then(|r| r.to_str()?.parse().ok())
        .unwrap_or(9);
    let (mut no_procs, mut only) = (false, None);
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--no-procs") => no_procs = true,
            Some("--rescans-only") => only = args.next().and_then(|n| n.to_str()?.parse().ok()),
            _ => panic!("unknown argument {a:?}"),
        }
    }
    let mut env = EnvSnapshot::from_pairs(
        home.clone(),
        vec![
            ("HOME".to_string(), home.display().to_string()),
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ],
    );
    env.euid = rustix::process::geteuid().as_raw();
    let opts = ScanOptions {
        env,
        platform: Platform::current(),
        age_guard: Duration::from_secs(120),
        now: SystemTime::now(),
    };
    let shared = home.join(".cache/smolvm/vms/_shared");
    let orphan = shared.join("0".repeat(63) + "f");
    // The two VMs' disks: a file in each of the first two stores, there from the start.
    let mut stores: Vec<PathBuf> = std::fs::read_dir(&shared)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    stores.sort();
    let disks: Vec<std::fs::File> = stores
        .iter()
        .take(2)
        .map(|s| {
            let f = std::fs::File::create(s.join("vm-disk.img")).unwrap();
            f.set_len(64 << 10).unwrap();
            f
        })
        .collect();
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    let memo = ScanMemo::new();
    let scan = |o: &ScanOptions| {
        if no_procs {
            scan_with(o, vec![])
        } else {
            scan(o)
        }
    };
    let scan_with_memo = |o: &ScanOptions, m: &ScanMemo| {
        if no_procs {
            scan_with_memo_and(o, vec![], m)
        } else {
            scan_with_memo(o, m)
        }
    };
    let first = scan_with_memo(&opts, &memo);
    if let Some(n) = only {
        // For a profiler: only rescans with nothing changed, 30 ms apart, after one more
        // (the second memo scan still reads the whole process table).
        scan_with_memo(&opts, &memo);
        let mut cpus = Vec::new();
        for _ in 0..n {
            std::thread::sleep(Duration::from_millis(30));
            cpus.push(timed(|| scan_with_memo(&opts, &memo)).2);
        }
        println!(
            "rescans={n} median_cpu_ms={:.1} last: {:?} {:?}",
            median(cpus).as_secs_f64() * 1e3,
            memo.stats(),
            memo.table_stats()
        );
        return;
    }
    let same = |a: &smolsweep::model::ScanReport, b: &smolsweep::model::ScanReport| {
        let j = |r: &smolsweep::model::ScanReport| serde_json::to_string(&r.findings).unwrap();
        assert_eq!(j(a), j(b), "an incremental rescan differs from a full scan");
    };
    same(&first, &scan(&opts));
    scan_with_memo(&opts, &memo);
    let (mut full, mut nothing, mut warm, mut one) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut full_cpu, mut nothing_cpu) = (Vec::new(), Vec::new());
    let (mut restated, mut disturbed) = (0, 0);
    let mut listings = (0, 0);
    let (mut kept, mut read, mut again) = (Vec::new(), Vec::new(), 0);
    let (mut writers, mut writers_read) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (f, wall, c) = timed(|| scan(&opts));
        full.push(wall);
        full_cpu.push(c);

        let (r, wall, c) = timed(|| scan_with_memo(&opts, &memo));
        same(&r, &f);
        let st = memo.stats();
        if st.read > 0 {
            // Nothing changed in the HOME, so the memo was emptied: the mount table changed
            // (another program mounted something) and nothing was trusted. Not a rescan's
            // cost with nothing changed: the round is left out, and counted.
            eprintln!("memo emptied by a change outside the HOME: {st:?}");
            disturbed += 1;
            full.pop();
            full_cpu.pop();
            scan_with_memo(&opts, &memo);
            continue;
        }
        nothing.push(wall);
        nothing_cpu.push(c);
        restated = st.restated;
        listings = (st.listings_reused, st.listings_read);
        let table = memo.table_stats();
        kept.push(table.kept);
        read.push(table.read);
        // Again: the first rescan after a full scan finds the CPU caches filled by that scan.
        let t = Instant::now();
        scan_with_memo(&opts, &memo);
        warm.push(t.elapsed());

        std::fs::create_dir_all(&orphan).unwrap();
        let disk = std::fs::File::create(orphan.join("rootfs.ext4")).unwrap();
        disk.set_len(4 << 20).unwrap();
        drop(disk);
        let t = Instant::now();
        let r = scan_with_memo(&opts, &memo);
        one.push(t.elapsed());
        let reads = memo.stats().read;
        again += usize::from(memo.table_stats().again);
        same(&r, &scan(&opts));
        assert!(r.findings.iter().any(|f| f.path == orphan));
        std::fs::remove_dir_all(&orphan).unwrap();
        scan_with_memo(&opts, &memo);
        eprintln!("new orphan: {reads} directories read");

        use std::os::unix::fs::FileExt;
        let block = [b'w'; 4096];
        for i in 0..queue + 1000 {
            for d in &disks {
                d.write_all_at(&block, (i % 16 * 4096) as u64).unwrap();
            }
        }
        let t = Instant::now();
        let r = scan_with_memo(&opts, &memo);
        writers.push(t.elapsed());
        writers_read.push(memo.stats().read);
        same(&r, &scan(&opts));
    }
    writers_read.sort_unstable();
    let (fc, nc) = (median(full_cpu), median(nothing_cpu));
    kept.sort_unstable();
    read.sort_unstable();
    let (f, n, w, o) = (median(full), median(nothing), median(warm), median(one));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = |d: Duration| d.as_secs_f64() / f.as_secs_f64();
    println!(
        "findings={} runs={runs} no_procs={no_procs} full_cpu_ms={:.1} rescan_nothing_after_full_cpu_ms={:.1} cpu_ratio_nothing_after_full={:.3} full_ms={:.1} rescan_nothing_after_full_ms={:.1} rescan_nothing_again_ms={:.1} rescan_one_orphan_ms={:.1} rescan_after_writers_ms={:.1} dirs_read_after_writers={} ratio_after_writers={:.3} ratio_nothing_after_full={:.3} ratio_nothing_again={:.3} ratio_one_orphan={:.3} remembered_dirs={} files_restated_per_rescan={restated} listings_kept_read_per_rescan={}/{} processes_kept_per_rescan={} processes_read_per_rescan={} orphan_rescans_made_twice={again} rounds_left_out={disturbed}",
        first.findings.len(),
        ms(fc),
        ms(nc),
        nc.as_secs_f64() / fc.as_secs_f64(),
        ms(f),
        ms(n),
        ms(w),
        ms(o),
        ms(median(writers.clone())),
        writers_read.get(writers_read.len() / 2).copied().unwrap_or(0),
        ratio(median(writers)),
        ratio(n),
        ratio(w),
        ratio(o),
        memo.stats().remembered,
        listings.0,
        listings.1,
        kept.get(kept.len() / 2).copied().unwrap_or(0),
        read.get(read.len() / 2).copied().unwrap_or(0),
    );
}
