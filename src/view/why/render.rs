//! `why`'s facts as sentences under their topics.

use std::path::{Path, PathBuf};

use crate::model::*;

use super::facts::*;
use super::Asked;
use crate::view::{bytes, class_label, compact::disk_sentence};

pub(super) fn line(topic: &'static str, text: impl Into<String>) -> Line {
    Line {
        topic,
        text: text.into(),
    }
}

/// `secs` since the epoch as a UTC time a person reads.
pub(super) fn when(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "an unknown time".into())
}

pub(super) fn day(secs: u64) -> String {
    when(secs).get(..10).unwrap_or_default().to_string()
}

pub(super) fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

pub(crate) fn render(why: &Why) -> Vec<Line> {
    let mut out = Vec::new();
    match &why.asked {
        Asked::Machine { product, name } => render_machine(why, *product, name, &mut out),
        Asked::Process(pid) => render_process(why, *pid, &mut out),
        _ if why.finding.is_some() => render_finding(why, &mut out),
        Asked::Path(p) => render_place(why, p, &mut out),
        Asked::Finding(id) => out.push(line(
            "",
            format!("No finding has the id {id} (`smolsweep scan -v` lists them)."),
        )),
    }
    out
}

pub(super) fn render_finding(why: &Why, out: &mut Vec<Line>) {
    let Some(f) = &why.finding else { return };
    if let Asked::Path(p) = &why.asked {
        if why.inside {
            out.push(line(
                "",
                format!(
                    "{} lies inside {}, which Smolsweep judges as a whole (id {}):",
                    crate::pathser::shown(p),
                    crate::pathser::shown(&f.path),
                    f.id
                ),
            ));
        }
    }
    if !why.inside {
        out.push(line(
            "",
            format!("{} (id {})", crate::pathser::shown(&f.path), f.id),
        ));
    }
    out.push(line(
        "Kind",
        format!(
            "{}, {}: {}",
            f.label,
            f.product.display_name(),
            why.meaning.unwrap_or_default()
        ),
    ));
    let word = match why.opt_in_class {
        Some(c) => format!("{} (only with {})", f.verdict_word, class_label(c).1),
        None => f.verdict_word.to_string(),
    };
    out.push(line(
        "Verdict",
        format!("{word}: {}", why.reason.clone().unwrap_or_default()),
    ));
    let apparent = if f.apparent_bytes != f.bytes {
        format!(" ({} apparent)", bytes(f.apparent_bytes))
    } else {
        String::new()
    };
    out.push(line(
        "Size",
        format!("{} on disk{apparent}.", bytes(f.bytes)),
    ));
    render_processes(why, out);
    render_record(why, out);
    render_keep(why, out);
    render_reach(why, out);
    render_chain(why, out);
    render_upstream(why, out);
    render_version(why, out);
    render_free(why, out);
    render_compact(why, out);
}

/// "Compact": one sentence per disk estimated (opt-in, never in the reclaimable total), then the
/// command that gives back what they hold (issue 39, item 4): `smolsweep compact smolvm:web`
/// for a machine or sandbox, `smolsweep compact PATH` for a disk.
pub(super) fn render_compact(why: &Why, out: &mut Vec<Line>) {
    for d in &why.compact {
        out.push(line("Compact", disk_sentence(d)));
    }
    let open = why.compact.iter().filter(|d| d.kept.is_none());
    let n: u64 = open.clone().map(|d| d.compactable_bytes).sum();
    let Some(first) = open.clone().find(|d| d.compactable_bytes > 0) else {
        return;
    };
    let target = match &why.asked {
        Asked::Machine { product, name } => format!("{}:{name}", product.as_str()),
        _ => crate::view::confirm::shell_word(&crate::pathser::shown(&first.path)),
    };
    out.push(line(
        "Compact",
        format!(
            "`smolsweep compact {target}` gives back about {} (opt-in, not in the reclaimable total).",
            bytes(n)
        ),
    ));
}

pub(super) fn use_words(u: Use) -> &'static str {
    match u {
        Use::HoldsOpen => "holds it open",
        Use::Names => "names it on its command line",
        Use::WorksIn => "works in it",
        Use::Maps => "maps it into memory",
        Use::Boots => "boots a VM from it",
        Use::Uses => "uses it",
    }
}

/// "Process 42 (`sleep 600`, user 1000, running since …)".
pub(super) fn process_words(p: &ProcessFacts) -> String {
    let mut parts = Vec::new();
    if !p.command.is_empty() {
        parts.push(format!("`{}`", p.command));
    }
    if let Some(u) = p.uid {
        parts.push(format!("user {u}"));
    }
    if let Some(s) = p.started_at {
        parts.push(format!("running since {}", when(s)));
    }
    let mut s = format!("Process {}", p.pid);
    if !parts.is_empty() {
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s
}

/// "a smolvm machine VM of web", for a VM process.
pub(super) fn vm_words(vm: &VmFacts) -> String {
    match &vm.owner {
        Some(o) => format!("a {} of {o}", vm.what),
        None => format!("a {}", vm.what),
    }
}

pub(super) fn render_processes(why: &Why, out: &mut Vec<Line>) {
    if why.processes.is_empty() {
        out.push(line(
            "Processes",
            "No process holds it open, names it, works in it, maps it or boots from it.",
        ));
    }
    for p in &why.processes {
        let how: Vec<&str> = p.uses.iter().map(|u| use_words(*u)).collect();
        let vm =
            p.vm.as_ref()
                .map(|v| format!(", {},", vm_words(v)))
                .unwrap_or_default();
        out.push(line(
            "Processes",
            format!("{}{vm} {}.", process_words(p), join_and(&how)),
        ));
    }
}

pub(super) fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

pub(super) fn record_words(rec: &Record) -> String {
    let mut s = format!("{} {} is {}", rec.noun, rec.name, rec.state);
    if let Some(pid) = rec.pid {
        s.push_str(&format!(" (recorded VM process {pid})"));
    }
    if let Some(c) = rec.created_at.and_then(|c| u64::try_from(c).ok()) {
        s.push_str(&format!(", created {}", day(c)));
    }
    if let Some(b) = &rec.branched_from {
        s.push_str(&format!(", branched from {b}"));
    }
    match &rec.inventory {
        Some(db) => format!(
            "{}'s inventory {} records it: {s}.",
            rec.product.display_name(),
            crate::pathser::shown(db)
        ),
        None => format!(
            "{}'s inventory records it: {s}.",
            rec.product.display_name()
        ),
    }
}

pub(super) fn render_record(why: &Why, out: &mut Vec<Line>) {
    let text = match (&why.record, why.unclaimed_in.as_slice()) {
        (Some(rec), _) => record_words(rec),
        (None, []) => "No inventory row claims it.".to_string(),
        (None, dbs) => format!(
            "No inventory row claims it: {} hold{} none (read again just before deleting).",
            dbs.iter()
                .map(|d| crate::pathser::shown(d))
                .collect::<Vec<_>>()
                .join(", "),
            if dbs.len() == 1 { "s" } else { "" }
        ),
    };
    out.push(line("Record", text));
}

pub(super) fn render_keep(why: &Why, out: &mut Vec<Line>) {
    let text = match &why.keep_rule {
        None => "No keep rule keeps it.".to_string(),
        Some(k) if !k.readable => {
            "Your keep rules could not be read, so it may be kept: fix or remove the keep file first."
                .to_string()
        }
        Some(k) => {
            let mut s = format!("Keep rule {}", k.rule);
            if let Some(since) = k.since {
                s.push_str(&format!(" (since {})", day(since)));
            }
            if let Some(what) = &k.keeps {
                s.push_str(&format!(" keeps {what}"));
            } else {
                s.push_str(" keeps it");
            }
            if let Some(r) = &k.reason {
                s.push_str(&format!(": \"{}\"", crate::pathser::escape_text(r)));
            }
            format!(
                "{s}. `smolsweep keep remove {}` releases it.",
                k.rule
            )
        }
    };
    out.push(line("Keep rule", text));
}

/// "Held": the chain from this finding to the root that holds it, nearest first; or that
/// nothing staying reaches what may go, and what was read to know it.
pub(super) fn render_reach(why: &Why, out: &mut Vec<Line>) {
    match &why.reach {
        Some(Reach::Held { chain, root }) => {
            for (i, step) in chain.iter().enumerate() {
                let then = if i == 0 { "" } else { "That is held in turn: " };
                out.push(line("Held", format!("{then}{}", step.text)));
            }
            out.push(line("Held", root.clone()));
        }
        Some(Reach::Nothing { records, leases }) => out.push(line(
            "Held",
            format!(
                "Nothing that stays reaches it: {records} machine and sandbox record{}, {leases} lease{} and the backing chain of every disk found were read.",
                if *records == 1 { "" } else { "s" },
                if *leases == 1 { "" } else { "s" },
            ),
        )),
        None => {}
    }
}

/// "Upstream": what the product writes there (the layout table), what it declares, and how
/// upstream itself cleans it.
pub(super) fn render_upstream(why: &Why, out: &mut Vec<Line>) {
    let Some(u) = &why.upstream else { return };
    let text = if u.exact {
        let declares = match u.declares.as_slice() {
            [] => String::new(),
            d => format!(" ({})", d.join("; ")),
        };
        format!(
            "It is {}{declares}, written since {}; upstream cleans it: {}.",
            u.what, u.since, u.cleans
        )
    } else {
        format!(
            "It lies in {}, written since {}; upstream cleans it: {}.",
            u.what, u.since, u.cleans
        )
    };
    out.push(line("Upstream", text));
}

pub(super) fn render_chain(why: &Why, out: &mut Vec<Line>) {
    let shown = |v: &[PathBuf]| {
        v.iter()
            .map(|p| crate::pathser::shown(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if why.needed_by.is_empty() && why.backs_onto.is_empty() {
        out.push(line(
            "Backing",
            "No disk's backing chain, lease or pause runs through it.",
        ));
    }
    if !why.needed_by.is_empty() {
        out.push(line(
            "Backing",
            format!(
                "{} need{} it (a disk's backing chain, a lease or a pause runs through it): it goes only with {}, after {}.",
                shown(&why.needed_by),
                if why.needed_by.len() == 1 { "s" } else { "" },
                if why.needed_by.len() == 1 {
                    "it"
                } else {
                    "them"
                },
                if why.needed_by.len() == 1 {
                    "it"
                } else {
                    "them"
                },
            ),
        ));
    }
    if !why.backs_onto.is_empty() {
        out.push(line(
            "Backing",
            format!("It backs onto {}.", shown(&why.backs_onto)),
        ));
    }
}

pub(super) fn render_version(why: &Why, out: &mut Vec<Line>) {
    let Some(v) = &why.version else { return };
    let upto = v.verified_up_to.join(", ");
    let text = match (&v.note, &v.installed) {
        (Some(note), _) => crate::pathser::escape_text(note),
        (None, Some(i)) => format!(
            "{} {i} is installed: a version Smolsweep's rules are verified on (up to {upto}).",
            v.product.display_name()
        ),
        (None, None) => format!(
            "No installed {} was found to check; the rules are those verified up to {upto}.",
            v.product.display_name()
        ),
    };
    out.push(line("Version", text));
}

/// The most actions of a plan listed beside its command.
pub(super) const MAX_ALSO: usize = 8;

pub(super) fn render_free(why: &Why, out: &mut Vec<Line>) {
    let Some(free) = &why.free else { return };
    if let Some(cmd) = &free.command {
        let plan = free.plan.as_deref().unwrap_or("");
        out.push(line("To free", format!("`{cmd}`: {plan}")));
        let n = free.also.len();
        if n > 0 {
            let what = match why.asked {
                Asked::Machine { .. } => "Its plan:",
                _ if n == 1 => "It also does this:",
                _ => "It also does these:",
            };
            out.push(line("To free", what));
            for a in free.also.iter().take(MAX_ALSO) {
                out.push(line("To free", format!("  {a}")));
            }
            if n > MAX_ALSO {
                out.push(line(
                    "To free",
                    format!("  … and {} more (`{cmd} -n` lists them).", n - MAX_ALSO),
                ));
            }
        }
        if let Some(only) = &free.only_this {
            out.push(line("To free", format!("Only this one: `{only}`.")));
        }
    }
    for b in &free.blocked {
        let b = match free.command {
            Some(_) => format!("It is not deleted now: {}", b.trim_end_matches('.')),
            None if b.starts_with("smolsweep ") => format!("What would end it: `{b}`."),
            None => capital(b),
        };
        let b = if b.ends_with('.') { b } else { format!("{b}.") };
        out.push(line("To free", b));
    }
}

pub(super) fn render_machine(why: &Why, product: Product, name: &str, out: &mut Vec<Line>) {
    let shown = format!("{}:{name}", product.as_str());
    let Some(rec) = &why.record else {
        if why.items.is_empty() {
            out.push(line(
                "",
                format!(
                    "No {} {} {shown} is recorded, and the scan found nothing of it.",
                    product.display_name(),
                    product.noun()
                ),
            ));
            return;
        }
        let head = match (&why.reason, why.processes.is_empty()) {
            (Some(story), false) => format!("{shown}: {story}"),
            _ => format!(
                "{shown}: no {} inventory records it any more; the scan found what it left behind.",
                product.display_name()
            ),
        };
        out.push(line("", head));
        // Its VM still runs: the one story the scan tells of it, and the command that ends it.
        for p in &why.processes {
            let vm = p.vm.as_ref().map(vm_words).unwrap_or_default();
            out.push(line(
                "Processes",
                format!("{}, {vm}, runs it.", process_words(p)),
            ));
        }
        render_items("Leftovers", why, out);
        render_version(why, out);
        if why.processes.is_empty() {
            out.push(line(
                "To free",
                "`smolsweep why PATH` explains each; `smolsweep prune` frees those that are reclaimable.",
            ));
        } else {
            render_free(why, out);
            out.push(line(
                "To free",
                "Once its VM has ended, `smolsweep prune` frees what it left.",
            ));
        }
        return;
    };
    out.push(line("", format!("{} {shown}", rec.noun)));
    out.push(line("Record", record_words(rec)));
    if why.processes.is_empty() {
        out.push(line("Processes", "No VM process runs it."));
    }
    for p in &why.processes {
        let vm = p.vm.as_ref().map(vm_words).unwrap_or_default();
        out.push(line(
            "Processes",
            format!("{}, {vm}, runs it.", process_words(p)),
        ));
    }
    render_items("Owns", why, out);
    if !why.branches.is_empty() {
        out.push(line(
            "Branches",
            format!(
                "Branched from it: {}; deleting it deletes them too (--cascade).",
                why.branches.join(", ")
            ),
        ));
    }
    render_keep(why, out);
    render_version(why, out);
    render_free(why, out);
    render_compact(why, out);
}

pub(super) fn render_items(topic: &'static str, why: &Why, out: &mut Vec<Line>) {
    if why.items.is_empty() {
        out.push(line(topic, "Nothing the scan found."));
    }
    for i in &why.items {
        out.push(line(
            topic,
            format!(
                "{}: {}, {}, {}.",
                crate::pathser::shown(&i.path),
                i.label,
                i.verdict_word,
                bytes(i.bytes)
            ),
        ));
    }
}

pub(super) fn render_process(why: &Why, pid: u32, out: &mut Vec<Line>) {
    let Some(p) = why.processes.first().filter(|p| p.exists) else {
        out.push(line("", format!("No process {pid} is running.")));
        return;
    };
    out.push(line("", format!("process {pid}")));
    let Some(vm) = &p.vm else {
        out.push(line(
            "Process",
            format!("{} is not a VM process of either SmolVM.", process_words(p)),
        ));
        render_items("Uses", why, out);
        out.push(line(
            "To free",
            "Smolsweep never ends a process that is not an orphaned VM of this HOME; what it uses stays protected while it runs.",
        ));
        return;
    };
    out.push(line(
        "Process",
        format!(
            "{} is {}, a VM process of {}.",
            process_words(p),
            vm_words(vm),
            vm.product.display_name()
        ),
    ));
    // Another HOME's: the scan's reason says so already (once, issue 31).
    let whose = match (vm.orphan, vm.this_home) {
        (_, false) => String::new(),
        (true, true) => "No inventory record owns it: it is an orphan of this HOME. ".into(),
        (false, true) => "It is this HOME's, and a record owns it. ".into(),
    };
    out.push(line("Whose", format!("{whose}{}", vm.reason)));
    if let Some(rec) = &why.record {
        out.push(line("Record", record_words(rec)));
    }
    if vm.held_deleted_bytes > 0 {
        out.push(line(
            "Holds",
            format!(
                "{} of deleted files, freed when it ends.",
                bytes(vm.held_deleted_bytes)
            ),
        ));
    }
    render_items("Uses", why, out);
    render_keep(why, out);
    render_version(why, out);
    render_free(why, out);
}

pub(super) fn render_place(why: &Why, p: &Path, out: &mut Vec<Line>) {
    let shown = crate::pathser::shown(p);
    if !why.found {
        // One sentence for what is not there (issue 31): not also "it is no leftover".
        let s = match &why.place {
            Some(Place::Under { root, .. }) if root.path != p => format!(
                "Nothing is at {shown}, in {}, {} {}: there is nothing to count or delete.",
                crate::pathser::shown(&root.path),
                root.product
                    .map(|p| format!("{}'s", p.display_name()))
                    .unwrap_or_else(|| "both SmolVMs'".into()),
                root.what
            ),
            _ => format!("Nothing is at {shown}."),
        };
        out.push(line("", s));
        if matches!(&why.place, Some(Place::Under { .. }) | None) {
            return;
        }
    }
    match &why.place {
        Some(Place::Under { root, findings }) if root.path == p => {
            let whose = root
                .product
                .map(|p| format!("{}'s", p.display_name()))
                .unwrap_or_else(|| "both SmolVMs'".into());
            out.push(line(
                "",
                format!(
                    "{shown} is {whose} {}: Smolsweep judges what is in it one by one ({findings} item{}; `smolsweep scan -v` lists them), never the directory itself.",
                    root.what,
                    if *findings == 1 { "" } else { "s" }
                ),
            ));
        }
        Some(Place::Under { root, findings }) => {
            let whose = root
                .product
                .map(|p| format!("{}'s", p.display_name()))
                .unwrap_or_else(|| "both SmolVMs'".into());
            let mut s = match &why.upstream {
                Some(u) if u.holds.is_some() => format!(
                    "{shown} lies in {}, {whose} {}: it is {}; Smolsweep judges what is in it ({}) one by one, never the directory itself.",
                    crate::pathser::shown(&root.path),
                    root.what,
                    u.what,
                    u.holds.unwrap_or_default()
                ),
                Some(u) => format!(
                    "{shown} lies in {}, {whose} {}: it {} {}{}, so Smolsweep never counts or deletes it.",
                    crate::pathser::shown(&root.path),
                    root.what,
                    if u.exact { "is" } else { "lies in" },
                    u.what,
                    u.never.map(|n| format!(" ({n})")).unwrap_or_default()
                ),
                None => format!(
                    "{shown} lies in {}, {whose} {}, but it is no leftover the scan recognises: Smolsweep neither counts nor deletes it.",
                    crate::pathser::shown(&root.path),
                    root.what
                ),
            };
            if *findings > 0 {
                s.push_str(&format!(
                    " It holds {findings} item{} the scan judges one by one (`smolsweep scan -v` lists them).",
                    if *findings == 1 { "" } else { "s" }
                ));
            }
            out.push(line("", s));
        }
        Some(Place::Outside { roots }) => {
            out.push(line(
                "",
                format!("{shown} is not SmolVM's: it lies outside every directory where Celesto SmolVM or smol-machines smolvm keep their state, so Smolsweep never judges or touches it. Those directories are:"),
            ));
            for r in roots {
                let whose = r
                    .product
                    .map(|p| p.display_name())
                    .unwrap_or("both SmolVMs");
                out.push(line(
                    "Roots",
                    format!("{} ({whose}, {})", crate::pathser::shown(&r.path), r.what),
                ));
            }
        }
        None => {}
    }
}
