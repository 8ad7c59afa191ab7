//! `smolsweep keep add|list|remove`: what the user told Smolsweep to leave alone.

use std::time::SystemTime;

use smolsweep::keep::{path_for, Keeps, Rule, Target};
use smolsweep::model::FindingKind;

use crate::cli::prefix;

#[derive(Debug, clap::Args)]
pub struct KeepArgs {
    #[command(subcommand)]
    pub command: KeepCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum KeepCommand {
    /// Keep a finding (id or path), a machine or sandbox (NAME, smolvm:NAME, celesto:ID), or a
    /// whole kind (--kind): never planned, never reclaimable, never notified again.
    Add {
        /// A finding id or path from `smolsweep scan -v`, or a machine/sandbox name.
        #[arg(required_unless_present = "kind", conflicts_with = "kind")]
        target: Option<String>,
        /// Keep every finding of this kind, for example `celesto.image_cache_stale`.
        #[arg(long, value_name = "KIND", value_parser = crate::cli::filters::kind_parser())]
        kind: Option<String>,
        /// Why, shown beside it. On a rule that exists, only what is given changes: without
        /// --why its reason stays.
        #[arg(long)]
        why: Option<String>,
    },
    /// List the keep rules: rule id, since (date), what it keeps, reason.
    List {
        /// Print the keep file's JSON (schema smolsweep.keep/1).
        #[arg(long)]
        json: bool,
    },
    /// Remove a keep rule by its id, or a prefix only that id starts with (from `keep list`).
    Remove { id: String },
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What `target` names in a scan made now (the core's one resolution, `keep::target_in`).
fn resolve(target: &str) -> Result<Target, String> {
    let opts = smolsweep::scan::ScanOptions::from_env().map_err(|e| e.to_string())?;
    let report = smolsweep::scan::scan(&opts);
    smolsweep::keep::target_in(&report, &smolsweep::keep::Named::Typed(target))
}

pub fn run(a: KeepArgs) -> i32 {
    let env = match smolsweep::env::EnvSnapshot::capture() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("smolsweep: {e:#}");
            return 1;
        }
    };
    let path = path_for(&env, smolsweep::model::Platform::current());
    match a.command {
        KeepCommand::List { json } => {
            let keeps = match Keeps::load(&path) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("smolsweep: {e}");
                    return 1;
                }
            };
            if json {
                crate::cli::out::json(&keeps);
            } else {
                crate::cli::out::print(&list(&keeps));
            }
            0
        }
        KeepCommand::Add { target, kind, why } => {
            let t = match (target, kind.as_deref().and_then(FindingKind::parse)) {
                (_, Some(kind)) => Ok(Target::Kind { kind }),
                (Some(t), None) => resolve(&t),
                (None, None) => Err("name what to keep".to_string()),
            };
            match t {
                Ok(t) => saved(Keeps::update(&path, |k| Ok(add(k, t, why.as_deref())))),
                Err(e) => {
                    eprintln!("smolsweep: {e}");
                    1
                }
            }
        }
        KeepCommand::Remove { id } => saved(Keeps::update(&path, |k| remove(k, &id))),
    }
}

/// `keep remove ID`: remove the one rule `id` names (in full or by a prefix only it starts
/// with). The line to say.
fn remove(keeps: &mut Keeps, id: &str) -> anyhow::Result<String> {
    let id = match prefix::find_to_remove(&keeps.rules, id, "keep rule", |r| &r.id) {
        Ok(Some(r)) => r.id.clone(),
        Ok(None) => anyhow::bail!("no keep rule {id} (see `smolsweep keep list`)"),
        Err(why) => anyhow::bail!("{why}"),
    };
    keeps.remove(&id);
    Ok(format!("Removed keep rule {id}."))
}

/// Add a rule keeping `t`, or update the one that keeps it already: only what is given changes
/// (its reason stays unless `why` is given; it is kept since it was first kept). The line to say.
fn add(keeps: &mut Keeps, t: Target, why: Option<&str>) -> String {
    if let Some(r) = keeps.rules.iter_mut().find(|r| r.target == t) {
        return match why {
            Some(w) if w != r.why => {
                r.why = w.to_string();
                format!(
                    "Already kept: {} (rule {}); reason updated.",
                    r.describe(),
                    r.id
                )
            }
            _ => format!("Already kept: {} (rule {}).", r.describe(), r.id),
        };
    }
    let rule = Rule::new(t, why.unwrap_or(""), now());
    let line = format!("Kept {} (rule {}).", rule.describe(), rule.id);
    keeps.add(rule);
    line
}

/// `keep list`: one line per rule under a header, columns aligned: rule, since, what, reason.
fn list(keeps: &Keeps) -> String {
    use std::fmt::Write;
    if keeps.rules.is_empty() {
        return "Nothing is kept.\n".into();
    }
    let what: Vec<String> = keeps.rules.iter().map(Rule::describe).collect();
    let id_w = keeps
        .rules
        .iter()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let what_w = what
        .iter()
        .map(|w| w.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<id_w$}  {:<10}  {:<what_w$}  REASON",
        "RULE", "SINCE", "KEEPS"
    );
    for (r, w) in keeps.rules.iter().zip(&what) {
        let why = smolsweep::view::escape_text(&r.why);
        let line = format!("{:<id_w$}  {}  {:<what_w$}  {why}", r.id, r.since_day(), w);
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

/// Say what [`Keeps::update`] saved, or why nothing was.
fn saved(r: anyhow::Result<String>) -> i32 {
    match r {
        Ok(line) => {
            crate::outln!("{line}");
            0
        }
        Err(e) => {
            eprintln!("smolsweep: {e}");
            1
        }
    }
}
