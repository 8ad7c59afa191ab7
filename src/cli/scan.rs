//! `smolsweep scan`.

use std::io::IsTerminal;

use crate::cli::report::RenderOptions;
use smolsweep::scan::{scan, ScanOptions};

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Print one JSON object (schema smolsweep.scan/1) instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// List every item under the summary.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
    /// Print Prometheus text exposition (for node_exporter's textfile collector) instead.
    #[arg(long, value_name = "FORMAT", value_parser = ["human", "json", "prometheus"])]
    pub format: Option<String>,
    /// Also list VM processes of other HOMEs.
    #[arg(long)]
    pub all_homes: bool,
    /// Print only the totals line.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// Add this scan's totals to the space history that `smolsweep trend` draws (the app and
    /// the timer's `auto` record every scan; a plain `scan` records nothing).
    #[arg(long)]
    pub record: bool,
    #[command(flatten)]
    pub report: crate::cli::run::ReportArgs,
}

/// Terminal facts the renderer needs, read from the process's environment.
fn render_options(args: &ScanArgs, now: std::time::SystemTime) -> RenderOptions {
    let tty = std::io::stdout().is_terminal();
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    // NO_COLOR wins; CLICOLOR_FORCE colours a pipe; otherwise colour only on a terminal.
    let color = var("NO_COLOR").is_none()
        && (var("CLICOLOR_FORCE").is_some_and(|v| v != "0")
            || tty && var("TERM").is_none_or(|t| t != "dumb"));
    let utf8 = crate::cli::out::utf8_locale();
    RenderOptions {
        width: terminal_width(tty),
        color,
        ascii: !utf8,
        verbose: args.verbose,
        kinds: args.filter.filter().kinds,
        all_homes: args.all_homes,
        quiet: args.quiet,
        filter: args.filter.filter(),
        now,
    }
}

/// `COLUMNS` when set, else the terminal's width, else 80.
fn terminal_width(tty: bool) -> usize {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return n;
    }
    if tty {
        if let Some(n) = crate::cli::out::terminal_columns(libc::STDOUT_FILENO) {
            return n;
        }
    }
    80
}

pub fn run(args: ScanArgs) -> i32 {
    let opts = match ScanOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("smolsweep: {e:#}");
            return 1;
        }
    };
    let mut report = match &args.report.from_report {
        Some(f) => match crate::cli::run::saved_report(f) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("smolsweep: {e:#}");
                return 1;
            }
        },
        None => scan(&opts),
    };
    if args.record {
        crate::cli::trend::record_scan(&report);
    }
    if !args.json && args.format.as_deref().is_none_or(|f| f == "human") {
        // The view narrows it, and says what it hid.
        crate::cli::out::print(&crate::cli::report::render_with(
            &report,
            &render_options(&args, opts.now),
        ));
        return 0;
    }
    // Everything shown is narrowed: findings (totals recounted), machines and VM processes.
    let _hidden = args.filter.filter().narrow(&mut report, opts.now);
    if args.format.as_deref() == Some("prometheus") {
        crate::cli::out::raw(&crate::cli::prom::render(&report));
        return 0;
    }
    match serde_json::to_string_pretty(&smolsweep::view::report_json(&report)) {
        Ok(s) => crate::cli::out::raw(&format!("{s}\n")),
        Err(e) => {
            eprintln!("smolsweep: {e}");
            return 1;
        }
    }
    0
}
