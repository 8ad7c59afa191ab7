//! `smolsweep why TARGET`: how Smolsweep judges one thing, and on what evidence. The target is
//! resolved here, the way `delete`, `stop` and `keep` resolve theirs; the answer is the core's
//! (`smolsweep::view::why`), printed as text or as JSON.

use std::path::{Component, Path, PathBuf};

use smolsweep::model::Product;
use smolsweep::view::why::Asked;
use smolsweep::WhyFacts;

use crate::cli::prefix::{self, Found};

#[derive(Debug, clap::Args)]
pub struct WhyArgs {
    /// A path, a finding id (or a prefix only it starts with), smolvm:NAME, celesto:ID, a bare
    /// machine name or sandbox id, or a process id.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Print the facts as one JSON object (schema smolsweep.why/1).
    #[arg(long)]
    pub json: bool,
}

/// `path` made absolute against the working directory, `.` and `..` taken lexically.
fn absolute(path: &Path) -> PathBuf {
    let joined = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The one product whose VM processes of this HOME or findings belong to `name`, which no
/// inventory records.
fn unrecorded(report: &smolsweep::model::ScanReport, name: &str) -> Option<Product> {
    let vm = report
        .processes
        .iter()
        .filter(|p| p.scope == smolsweep::model::Scope::ThisHome)
        .filter(|p| p.owner.as_deref() == Some(name))
        .map(|p| p.product);
    let left = report
        .findings
        .iter()
        .filter(|f| f.owner.as_deref() == Some(name))
        .map(|f| f.product);
    let mut products: Vec<Product> = vm.chain(left).collect();
    products.sort();
    products.dedup();
    match products[..] {
        [p] => Some(p),
        _ => None,
    }
}

/// What `target` names in `report`: `smolvm:NAME` / `celesto:ID`, a path, what it names in full
/// (a finding id, a machine by its bare name, a running process; two of them: ambiguous), a
/// unique prefix of a finding id, another process, or a relative path that exists. Err: why it
/// names nothing, or what it names twice.
fn resolve(facts: &WhyFacts, target: &str) -> Result<Asked, String> {
    let report = facts.report();
    for (p, product) in [("smolvm:", Product::Smolvm), ("celesto:", Product::Celesto)] {
        if let Some(name) = target.strip_prefix(p) {
            // A recorded machine, or the leftovers of one that is gone: the core says which.
            return Ok(Asked::Machine {
                product,
                name: name.to_string(),
            });
        }
    }
    if let (Some(rest), Some(home)) = (target.strip_prefix("~/"), std::env::var_os("HOME")) {
        return Ok(Asked::Path(absolute(&Path::new(&home).join(rest))));
    }
    if target.contains('/') || target.starts_with('.') {
        return Ok(Asked::Path(absolute(Path::new(target))));
    }
    let pid = target.parse::<u32>().ok().filter(|p| *p > 0);
    // Like git: what `target` names in full (a finding id, a machine's name, a running
    // process) before a finding id it only starts; named in full twice, it is ambiguous.
    let mut exact: Vec<(String, Asked)> = Vec::new();
    if let Some(f) = report.findings.iter().find(|f| f.id == target) {
        exact.push((format!("finding {}", f.id), Asked::Finding(f.id.clone())));
    }
    if let Ok(m) = smolsweep::plan::find_machine(report, target) {
        let (product, name) = (m.product, m.name.clone());
        let shown = format!("machine {}:{name}", product.as_str());
        exact.push((shown, Asked::Machine { product, name }));
    } else if let Some(product) = unrecorded(report, target) {
        // A sandbox no inventory lists any more, whose VM or leftovers the scan found: the
        // same object `why celesto:ID` explains (issue 39, item 6).
        let shown = format!("{} {}:{target}", product.noun(), product.as_str());
        let name = target.to_string();
        exact.push((shown, Asked::Machine { product, name }));
    }
    if let Some(pid) = pid.filter(|p| facts.has_process(*p)) {
        exact.push((format!("process {pid}"), Asked::Process(pid)));
    }
    if exact.len() > 1 {
        let names: Vec<String> = exact.into_iter().map(|(shown, _)| shown).collect();
        return Err(format!(
            "'{target}' is ambiguous: it names {}",
            names.join(", ")
        ));
    }
    if let Some((_, asked)) = exact.pop() {
        return Ok(asked);
    }
    match prefix::find(&report.findings, target, |f| &f.id) {
        Found::One(f) => return Ok(Asked::Finding(f.id.clone())),
        Found::Ambiguous(ids) => return Err(prefix::ambiguous("finding id", target, &ids)),
        Found::None => {}
    }
    if let Some(pid) = pid {
        return Ok(Asked::Process(pid));
    }
    if Path::new(target).symlink_metadata().is_ok() {
        return Ok(Asked::Path(absolute(Path::new(target))));
    }
    Err(format!(
        "'{target}' is not a path, a finding id, a machine or sandbox, or a process \
(`smolsweep scan -v` lists ids and machines)"
    ))
}

pub fn run(a: WhyArgs) -> i32 {
    let opts = match smolsweep::scan::ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("smolsweep: {e:#}");
            return 1;
        }
    };
    let facts = WhyFacts::gather(&opts);
    let asked = match resolve(&facts, &a.target) {
        Ok(asked) => asked,
        Err(e) => {
            eprintln!("smolsweep: {e}");
            return 1;
        }
    };
    let why = facts.explain(&asked);
    if a.json {
        crate::cli::out::json(&why);
    } else if why.found {
        let text = why.text();
        crate::cli::out::print(&if crate::cli::out::utf8_locale() {
            text
        } else {
            smolsweep::view::ascii(&text)
        });
    } else {
        eprint!("smolsweep: {}", why.text());
    }
    if why.found {
        0
    } else {
        1
    }
}
