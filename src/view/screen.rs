//! The first screen of a scan (issue 19): what frees something, largest first, one line for
//! the items that free nothing, one line for the machines and one for the VM processes, so
//! that the answer fits 24 lines of 80 columns. Every item a total counts is in a line of the
//! same screen (issue 31): a table line is a kind's items that share a verdict, a folded line
//! counts reclaimable and opt-in items apart, and "nothing to free" is said only of items no
//! total counts. The sentences are here, beside the rest of
//! the view; the CLI only lays them out.

use serde::Serialize;

use super::{bytes, Group, ScanView};
use crate::filter::Hidden;
use crate::model::{Product, Verdict};

/// Table lines folded into one line: how many items of each verdict class they hold, and
/// their bytes, never added across classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fold {
    /// Lines (kind and verdict) folded.
    pub lines: usize,
    /// Reclaimable items they hold.
    pub reclaimable_items: usize,
    /// The bytes of those.
    pub reclaimable_bytes: u64,
    /// Opt-in items they hold.
    pub opt_in_items: usize,
    /// The bytes of those.
    pub opt_in_bytes: u64,
    /// Protected items they hold.
    pub protected_items: usize,
    /// Unverifiable items they hold.
    pub unknown_items: usize,
    /// The bytes of the protected and unverifiable ones.
    pub left_bytes: u64,
}

impl Fold {
    fn of(lines: &[TableLine<'_>]) -> Fold {
        let mut f = Fold {
            lines: lines.len(),
            ..Fold::default()
        };
        for l in lines {
            match l.verdict {
                Verdict::Reclaimable => {
                    f.reclaimable_items += l.count;
                    f.reclaimable_bytes += l.bytes;
                }
                Verdict::OptIn => {
                    f.opt_in_items += l.count;
                    f.opt_in_bytes += l.bytes;
                }
                Verdict::Protected => f.protected_items += l.count,
                Verdict::Unknown => f.unknown_items += l.count,
            }
            if !l.frees() {
                f.left_bytes += l.bytes;
            }
        }
        f
    }
}

/// One line of the scan's table: the items of one kind that share a verdict, so that every
/// count a screen states is the sum of the lines it counts (a kind whose items have two
/// verdicts is two lines).
#[derive(Debug, Clone, Serialize)]
pub struct TableLine<'v> {
    /// The kind's group.
    #[serde(skip)]
    pub group: &'v Group,
    /// The verdict its items share.
    pub verdict: Verdict,
    /// That verdict's one word ("reclaimable", "opt-in", "protected", "unverifiable").
    pub word: &'static str,
    /// Items of the kind with that verdict (0-byte ones too).
    pub count: usize,
    /// Their allocated bytes.
    pub bytes: u64,
    /// `bytes` for a person.
    pub size: String,
}

impl TableLine<'_> {
    /// Whether a prune frees these items (with or without an opt-in flag).
    pub fn frees(&self) -> bool {
        matches!(self.verdict, Verdict::Reclaimable | Verdict::OptIn)
    }
}

/// The first screen's part of a scan's table.
#[derive(Debug, Clone, Serialize)]
pub struct FirstScreen<'v> {
    /// The lines whose items a prune frees (reclaimable or opt-in, 0-byte items included),
    /// largest first: as many as were asked for.
    pub rows: Vec<TableLine<'v>>,
    /// The lines that free something but did not fit (`lines` 0: none).
    pub more: Fold,
    /// The lines that free nothing: protected or unverifiable (`lines` 0: none).
    pub nothing: Fold,
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Reclaimable => 0,
        Verdict::OptIn => 1,
        Verdict::Protected => 2,
        Verdict::Unknown => 3,
    }
}

impl ScanView {
    /// Every line of the table (`-v`): a kind's items that share a verdict, reclaimable ones
    /// first, then opt-in, protected and unverifiable, largest first within each.
    pub fn table_lines(&self) -> Vec<TableLine<'_>> {
        let mut out = Vec::new();
        for g in &self.groups {
            for v in [
                Verdict::Reclaimable,
                Verdict::OptIn,
                Verdict::Protected,
                Verdict::Unknown,
            ] {
                let rows = g.rows.iter().filter(|r| r.verdict == v);
                let (count, bytes) = rows.fold((0, 0), |(n, b), r| (n + 1, b + r.bytes));
                if count > 0 {
                    out.push(TableLine {
                        group: g,
                        verdict: v,
                        word: super::verdict_word(v),
                        count,
                        bytes,
                        size: super::bytes(bytes),
                    });
                }
            }
        }
        out.sort_by(|a, b| {
            (rank(a.verdict), std::cmp::Reverse(a.bytes))
                .cmp(&(rank(b.verdict), std::cmp::Reverse(b.bytes)))
        });
        out
    }

    /// The lines that free something, in the table's order (what a plain `prune` frees first,
    /// largest first; then the opt-in ones); at most `max_rows` of them as rows, the rest
    /// folded.
    pub fn first_screen(&self, max_rows: usize) -> FirstScreen<'_> {
        let (mut freeing, nothing): (Vec<TableLine>, Vec<TableLine>) =
            self.table_lines().into_iter().partition(TableLine::frees);
        // One row is given up to the line that folds the rest: folding one row saves nothing.
        let shown = if freeing.len() <= max_rows {
            freeing.len()
        } else {
            max_rows.saturating_sub(1).max(1)
        };
        let more = Fold::of(&freeing[shown..]);
        freeing.truncate(shown);
        FirstScreen {
            more,
            nothing: Fold::of(&nothing),
            rows: freeing,
        }
    }
    /// What the scan's VMs are called together, each product's in its one noun ([`Product::noun`]):
    /// "Sandboxes and machines" when both products' are listed (or, with none listed, both
    /// products are found), else "Sandboxes" or "Machines".
    pub fn machines_heading(&self) -> &'static str {
        let has = |p: Product| match self.machines.is_empty() {
            false => self.machines.iter().any(|m| m.product == p),
            true => self
                .products
                .iter()
                .any(|l| l.product == p && l.status != "not found"),
        };
        match (has(Product::Celesto), has(Product::Smolvm)) {
            (true, true) => "Sandboxes and machines",
            (true, false) => "Sandboxes",
            _ => "Machines",
        }
    }

    /// "Sandboxes 8 (1 running): fire1, vm-abc123, …; machines 9: booted, …", each product's in
    /// its one noun ([`Product::nouns`]), fit to
    /// `width` columns (`ascii`: as [`super::ascii`] will print it); the running ones are named
    /// first. `None` under a filter that picks items (kind, age, size).
    pub fn machines_line(&self, width: usize, ascii: bool) -> Option<String> {
        if self.hidden.as_ref().is_some_and(|h| h.items_only) {
            return None;
        }
        let heading = self.machines_heading();
        if self.machines.is_empty() {
            return Some(format!("{heading}: none."));
        }
        let mut lists: Vec<(String, Vec<String>)> = Vec::new();
        for p in Product::ALL {
            let of = |running: bool| {
                self.machines
                    .iter()
                    .filter(move |m| m.product == p && m.running == running)
            };
            let n = of(true).count() + of(false).count();
            if n == 0 {
                continue;
            }
            let noun = match lists.is_empty() {
                true => capitalised(p.nouns()),
                false => p.nouns().to_string(),
            };
            let label = match of(true).count() {
                0 => format!("{noun} {n}"),
                r => format!("{noun} {n} ({r} running)"),
            };
            let names = of(true)
                .chain(of(false))
                .map(|m| super::escape_text(&m.name));
            lists.push((label, names.collect()));
        }
        Some(fit_lists("", lists, "", width, ascii))
    }

    /// "Running VMs: 2 (1 sandbox, 1 orphaned) — fire1 (Celesto QEMU VM, pid 12), …", the one
    /// count ([`super::VmCount`]) with this HOME's VM processes named, orphans first, fit to
    /// `width` columns; `all_homes` names other HOMEs' too (else they are counted apart, on
    /// [`ScanView::other_homes_cli_line`]). `None` under a filter that picks items (kind, age,
    /// size).
    pub fn processes_line(&self, width: usize, ascii: bool, all_homes: bool) -> Option<String> {
        if self.hidden.as_ref().is_some_and(|h| h.items_only) {
            return None;
        }
        let shown: Vec<_> = self
            .processes
            .iter()
            .filter(|p| p.this_home || all_homes)
            .collect();
        let head = self.vms_line.clone();
        if shown.is_empty() {
            return Some(format!("{head}."));
        }
        let names = shown
            .iter()
            .filter(|p| p.orphan && p.this_home)
            .chain(shown.iter().filter(|p| !p.orphan && p.this_home))
            .chain(shown.iter().filter(|p| !p.this_home))
            .map(|p| {
                let whose = if p.this_home { "" } else { "another HOME's " };
                let orphan = if p.orphan && p.this_home {
                    "orphaned "
                } else {
                    ""
                };
                let owner = p.owner.as_deref().map(super::escape_text);
                format!(
                    "{} ({whose}{orphan}{}, pid {})",
                    owner.as_deref().unwrap_or("unnamed"),
                    p.what,
                    p.pid
                )
            })
            .collect();
        Some(fit_lists(
            &head,
            vec![(String::new(), names)],
            "",
            width,
            ascii,
        ))
    }

    /// Other HOMEs' VM processes, counted apart from this HOME's running VMs: "VM processes of
    /// other HOMEs: 2 (--all-homes lists them)." (`all_homes`: "…: 2."); `None` when there are
    /// none, or under a filter that picks items.
    pub fn other_homes_cli_line(&self, all_homes: bool) -> Option<String> {
        if self.hidden.as_ref().is_some_and(|h| h.items_only) {
            return None;
        }
        let o = self.other_homes_count.as_ref()?;
        Some(match all_homes {
            true => format!("{o}."),
            false => format!("{o} (--all-homes lists them)."),
        })
    }
}

impl FirstScreen<'_> {
    /// "… 14 more lines: 1.2 MB reclaimable (20 items), 700 kB opt-in (10 items)." for the rows
    /// that did not fit; reclaimable and opt-in bytes are never added together.
    pub fn more_line(&self) -> Option<String> {
        let m = &self.more;
        if m.lines == 0 {
            return None;
        }
        let mut parts = Vec::new();
        if m.reclaimable_items > 0 {
            parts.push(format!(
                "{} reclaimable ({})",
                bytes(m.reclaimable_bytes),
                plural(m.reclaimable_items, "item", "items")
            ));
        }
        if m.opt_in_items > 0 {
            parts.push(format!(
                "{} opt-in ({})",
                bytes(m.opt_in_bytes),
                plural(m.opt_in_items, "item", "items")
            ));
        }
        Some(format!(
            "… {}: {}.",
            plural(m.lines, "more line", "more lines"),
            parts.join(", ")
        ))
    }

    /// "Left alone: 52 more items (23.5 MB), protected or unverifiable." for the items that
    /// free nothing (`rows_shown`: whether any row came before it; without: "Nothing to free:
    /// …"), said only of items no total counts.
    pub fn nothing_line(&self, rows_shown: bool) -> Option<String> {
        let n = &self.nothing;
        let items = n.protected_items + n.unknown_items;
        if items == 0 {
            return None;
        }
        let what = match (n.protected_items, n.unknown_items) {
            (_, 0) => "protected",
            (0, _) => "unverifiable",
            _ => "protected or unverifiable",
        };
        let size = match n.left_bytes {
            0 => "0 B".to_string(),
            b => bytes(b),
        };
        Some(match rows_shown {
            true => format!(
                "Left alone: {} ({size}), {what}.",
                plural(items, "more item", "more items")
            ),
            false => format!(
                "Nothing to free: {} ({size}), {what}.",
                plural(items, "item", "items")
            ),
        })
    }
}

/// "VM processes of other HOMEs: 2 (shown, never acted on)." for the window's folded group of
/// them, the one count's words ([`super::VmCount`]); `None` when there are none.
pub(super) fn other_homes_line(r: &crate::model::ScanReport) -> Option<String> {
    super::VmCount::of(r)
        .other_homes_line()
        .map(|l| format!("{l} (shown, never acted on)."))
}

/// "3 of 46 items match --older-than 7d; not shown: 17 machines." or, when none match, "None
/// of the 46 items match --older-than 3650d."
pub(super) fn filter_note(h: &Hidden) -> String {
    note_of(h, &h.flags)
}

/// The window's line of the same: "3 of 46 items match the filter (older than 7 days); not
/// shown: 17 machines."
pub(super) fn filter_line(h: &Hidden) -> String {
    note_of(h, &format!("the filter ({})", h.words))
}

fn note_of(h: &Hidden, what: &str) -> String {
    let items = match (h.items, h.matching) {
        (0, _) => format!("No items to match {what}"),
        (1, 0) => format!("The 1 item does not match {what}"),
        (n, 0) => format!("None of the {n} items match {what}"),
        (n, 1) => format!("1 of {n} items matches {what}"),
        (n, m) => format!("{m} of {n} items match {what}"),
    };
    let mut not_shown = Vec::new();
    if h.sandboxes > 0 {
        not_shown.push(Product::Celesto.count(h.sandboxes));
    }
    if h.machines > 0 {
        not_shown.push(Product::Smolvm.count(h.machines));
    }
    if h.processes > 0 {
        not_shown.push(plural(h.processes, "VM process", "VM processes"));
    }
    match not_shown.is_empty() {
        true => format!("{items}."),
        false => format!("{items}; not shown: {}.", not_shown.join(", ")),
    }
}

/// `head — label: a, b, …; label: c, …` + `tail` in at most `width` columns, names taken in
/// turn from each list while they fit, a list that lost some ending in "…".
fn fit_lists(
    head: &str,
    lists: Vec<(String, Vec<String>)>,
    tail: &str,
    width: usize,
    ascii: bool,
) -> String {
    let (dash, ell) = if ascii {
        (" - ", "...")
    } else {
        (" — ", "…")
    };
    let len = |s: &str| s.chars().count();
    let render = |taken: &[usize]| {
        let parts: Vec<String> = lists
            .iter()
            .zip(taken)
            .map(|((label, names), &n)| {
                let mut shown: Vec<&str> = names[..n].iter().map(String::as_str).collect();
                if n < names.len() {
                    shown.push(ell);
                }
                let label = match label.is_empty() {
                    true => String::new(),
                    false => format!("{label}: "),
                };
                format!("{label}{}", shown.join(", "))
            })
            .collect();
        match head.is_empty() {
            true => format!("{}{tail}", parts.join("; ")),
            false => format!("{head}{dash}{}{tail}", parts.join("; ")),
        }
    };
    let mut taken = vec![0; lists.len()];
    loop {
        let mut grew = false;
        for i in 0..lists.len() {
            if taken[i] == lists[i].1.len() {
                continue;
            }
            taken[i] += 1;
            if len(&render(&taken)) <= width {
                grew = true;
            } else {
                taken[i] -= 1;
            }
        }
        if !grew {
            break;
        }
    }
    render(&taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_fit_the_width_taking_names_in_turn() {
        let lists = vec![
            ("celesto 10".to_string(), vec!["aaaa".to_string(); 10]),
            ("smolvm 10".to_string(), vec!["bbbb".to_string(); 10]),
        ];
        let s = fit_lists("Machines: 20", lists.clone(), ".", 60, false);
        assert!(s.chars().count() <= 60, "{s}");
        assert!(
            s.contains("celesto 10: aaaa") && s.contains("smolvm 10: bbbb"),
            "{s}"
        );
        assert_eq!(s.matches('…').count(), 2, "{s}");
        let wide = fit_lists("Machines: 20", lists.clone(), ".", 400, false);
        assert!(!wide.contains('…') && wide.ends_with("bbbb."), "{wide}");
        let a = fit_lists("Machines: 20", lists, ".", 60, true);
        assert!(a.is_ascii() && a.len() <= 60, "{a}");
    }

    #[test]
    fn a_filter_note_says_how_many_it_hid() {
        let h = Hidden {
            items: 46,
            matching: 0,
            machines: 9,
            sandboxes: 8,
            processes: 1,
            items_only: true,
            flags: "--older-than 3650d".into(),
            words: "older than 3650 days".into(),
        };
        assert_eq!(
            filter_note(&h),
            "None of the 46 items match --older-than 3650d; not shown: 8 sandboxes, 9 machines, 1 VM process."
        );
        let h = Hidden {
            matching: 3,
            machines: 0,
            sandboxes: 0,
            processes: 0,
            ..h.clone()
        };
        assert_eq!(filter_note(&h), "3 of 46 items match --older-than 3650d.");
        assert_eq!(
            filter_line(&h),
            "3 of 46 items match the filter (older than 3650 days)."
        );
    }
}

#[cfg(test)]
mod filter_tests {
    use std::time::{Duration, SystemTime};

    use crate::filter::Filter;
    use crate::kind::FindingKind;
    use crate::model::*;
    use crate::view::ScanView;

    /// Both products: a finding, a machine and an orphaned VM process of this HOME each.
    fn both_products() -> ScanReport {
        let finding = |id: &str, product: &str, kind: &str, age_days: u64| {
            let changed = SystemTime::now() - Duration::from_secs(age_days * 86_400);
            serde_json::json!({
                "id": id, "product": product, "kind": kind, "path": format!("/h/{id}"),
                "apparent_bytes": 4096, "allocated_bytes": 4096, "verdict": "reclaimable",
                "reason": "a leftover", "newest_change_ns":
                    changed.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64,
            })
        };
        let process = |pid: u32, product: &str, shape: &str, owner: &str| {
            serde_json::json!({
                "pid": pid, "start_time": 1, "product": product, "shape": shape,
                "owner": owner, "orphan": true, "scope": "this_home", "held_deleted_bytes": 0,
            })
        };
        let mut r: ScanReport = serde_json::from_value(serde_json::json!({
            "schema": SCAN_SCHEMA, "home": "/h", "platform": "linux", "products": [],
            "findings": [
                finding("c1", "celesto", "celesto.orphan_log", 30),
                finding("s1", "smolvm", "smolvm.empty_dir", 1),
            ],
            "machines": [
                {"product": "celesto", "name": "sandbox-one", "state": "running", "alive": true},
                {"product": "smolvm", "name": "machine-one", "state": "stopped", "alive": false},
            ],
            "processes": [
                process(101, "celesto", "celesto.qemu", "sandbox-two"),
                process(202, "smolvm", "smolvm.boot_vm", "machine-two"),
            ],
            "totals": Totals::default(), "scanned_at": 0, "duration_ms": 0
        }))
        .unwrap();
        r.compute_totals();
        r
    }

    /// Issue 19: `--product smolvm` showed Celesto sandboxes, the Celesto QEMU process and
    /// "reap ends 2".
    #[test]
    fn product_filter_hides_the_other_products_machines_and_processes() {
        let r = both_products();
        let f = Filter {
            products: vec![Product::Smolvm],
            ..Filter::default()
        };
        let now = SystemTime::now();
        let v = ScanView::filtered(&r, &crate::plan::Plan::reclaimable_of(&r, &f, now));
        assert!(v.groups.iter().all(|g| g.product == Product::Smolvm));
        assert!(v.machines.iter().all(|m| m.product == Product::Smolvm));
        assert!(v.processes.iter().all(|p| p.product == Product::Smolvm));
        assert_eq!((v.machines.len(), v.processes.len()), (1, 1));
        assert_eq!(v.totals.orphan_processes, 1);
        let machines = v.machines_line(80, false).unwrap();
        let processes = v.processes_line(80, false, false).unwrap();
        for text in [&machines, &processes] {
            assert!(
                !text.contains("sandbox") && !text.contains("Celesto"),
                "{text}"
            );
        }
        assert!(machines.contains("machine-one"), "{machines}");
        assert!(processes.contains("machine-two"), "{processes}");
        let next = v.next_steps.join("\n");
        // `reap` takes no filter: it is told the pid shown, not "ends 2".
        assert!(
            next.contains("`smolsweep reap 202` ends 1 orphaned VM process."),
            "{next}"
        );
        assert!(!next.contains("101"), "{next}");
        assert_eq!(
            v.filter_note.as_deref(),
            Some("1 of 2 items matches --product smolvm; not shown: 1 sandbox, 1 VM process.")
        );
        // Unfiltered, both are there and nothing is said about a filter.
        let (all, now) = (Filter::default(), SystemTime::now());
        let all = ScanView::filtered(&r, &crate::plan::Plan::reclaimable_of(&r, &all, now));
        assert_eq!((all.machines.len(), all.processes.len()), (2, 2));
        assert!(all.filter_note.is_none() && all.hidden.is_none());
        assert!(all
            .next_steps
            .iter()
            .any(|s| s.contains("`smolsweep reap` ends 2")));
    }

    /// Issue 31: the window gets the machines' heading in each product's noun and one line for
    /// other HOMEs' VM processes, as data.
    #[test]
    fn the_window_gets_the_machines_heading_and_the_other_homes_line() {
        let mut r = both_products();
        let v = ScanView::of(&r, &crate::plan::Plan::reclaimable(&r));
        assert_eq!(v.machines_heading, "Sandboxes and machines");
        assert_eq!(v.other_homes_line, None);
        r.processes[0].scope = Scope::Foreign;
        r.machines.retain(|m| m.product == Product::Smolvm);
        let v = ScanView::of(&r, &crate::plan::Plan::reclaimable(&r));
        assert_eq!(v.machines_heading, "Machines");
        assert_eq!(
            v.other_homes_line.as_deref(),
            Some("VM processes of other HOMEs: 1 (shown, never acted on).")
        );
    }

    /// Issue 19: `--older-than 3650d` said "Nothing of either SmolVM found." beside findings.
    #[test]
    fn a_filter_that_matches_nothing_says_how_many_it_hid() {
        let r = both_products();
        let f = Filter {
            older_than_secs: Some(3650 * 86_400),
            ..Filter::default()
        };
        let now = SystemTime::now();
        let v = ScanView::filtered(&r, &crate::plan::Plan::reclaimable_of(&r, &f, now));
        assert!(v.groups.is_empty() && v.machines.is_empty() && v.processes.is_empty());
        assert_eq!(
            v.filter_note.as_deref(),
            Some("None of the 2 items match --older-than 3650d; not shown: 1 sandbox, 1 machine, 2 VM processes.")
        );
        assert!(v.next_steps.is_empty(), "{:?}", v.next_steps);
        assert!(v.machines_line(80, false).is_none());
        // A week: the month-old Celesto log matches, the day-old smolvm directory does not.
        let f = Filter {
            older_than_secs: Some(7 * 86_400),
            ..Filter::default()
        };
        let now = SystemTime::now();
        let v = ScanView::filtered(&r, &crate::plan::Plan::reclaimable_of(&r, &f, now));
        assert_eq!(v.groups.len(), 1);
        assert_eq!(v.groups[0].kind, FindingKind::CelestoOrphanLog);
        assert!(v
            .filter_note
            .unwrap()
            .starts_with("1 of 2 items matches --older-than 7d"));
        assert_eq!(v.groups[0].reclaimable_count, 1);
    }
}
