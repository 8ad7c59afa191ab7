//! `smolsweep browse`: the scan in an interactive terminal view, for hosts where no window
//! runs (SSH, CI agents). The same groups, rows, sizes, verdicts and reasons as the window
//! (the core's `ScanView`); Space marks what may be acted on, `d` shows the core's plan and
//! confirmation for exactly the marked items, and `y` runs it through the one executor.
//!
//! It redraws only on a key (or a resize) and when a scan or a step of a run finishes: it
//! blocks on the terminal's events, never polls. Without a terminal it refuses (exit 2) and
//! names `smolsweep scan`. The terminal is restored on exit and on a panic (ratatui's hook).

use std::cell::RefCell;
use std::io::IsTerminal;

use crossterm::event::{self, Event};
use smolsweep::exec::{self, Confirmed, How, ProgressEvent};
use smolsweep::plan::Plan;
use smolsweep::scan::{scan, ScanOptions};
use smolsweep::view::ScanView;

pub(crate) mod state;
#[cfg(test)]
mod tests;
pub(crate) mod ui;

use state::{App, Effect};

#[derive(Debug, clap::Args)]
pub struct BrowseArgs {
    #[command(flatten)]
    pub filter: crate::cli::filters::FilterArgs,
    #[command(flatten)]
    pub report: crate::cli::run::ReportArgs,
}

/// The message and exit code without a terminal.
const NO_TERMINAL: &str = "smolsweep: browse needs a terminal (stdin and stdout); \
`smolsweep scan` prints the same findings as text (`smolsweep scan -v` every item, \
`smolsweep scan --json` as data)";

pub fn run(args: BrowseArgs) -> i32 {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        eprintln!("{NO_TERMINAL}");
        return 2;
    }
    // Before the terminal changes: a broken environment is said plainly.
    if let Err(e) = ScanOptions::from_env() {
        eprintln!("smolsweep: {e:#}");
        return 1;
    }
    let ascii = !crate::cli::out::utf8_locale();
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            eprintln!("smolsweep: cannot use this terminal: {e}");
            return 1;
        }
    };
    let result = event_loop(&mut terminal, &args, App::new(ascii, color));
    ratatui::restore();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("smolsweep: {e}");
            1
        }
    }
}

/// A scan of this environment and its view under the filter, as `smolsweep scan` makes them.
fn scan_now(args: &BrowseArgs) -> anyhow::Result<(smolsweep::model::ScanReport, ScanView)> {
    let opts = ScanOptions::from_env()?;
    let report = match &args.report.from_report {
        Some(f) => crate::cli::run::saved_report(f)?,
        None => scan(&opts),
    };
    let filter = args.filter.filter();
    let view = if filter.is_empty() {
        ScanView::of(&report, &smolsweep::plan::Plan::reclaimable(&report))
    } else {
        ScanView::filtered(
            &report,
            &smolsweep::plan::Plan::reclaimable_of(&report, &filter, opts.now),
        )
    };
    Ok((report, view))
}

fn rescan(
    terminal: &mut ratatui::DefaultTerminal,
    args: &BrowseArgs,
    app: &mut App,
) -> anyhow::Result<()> {
    app.scanning();
    terminal.draw(|f| ui::draw(f, app))?;
    let (report, view) = scan_now(args)?;
    app.load(report, view);
    Ok(())
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    args: &BrowseArgs,
    mut app: App,
) -> anyhow::Result<()> {
    rescan(terminal, args, &mut app)?;
    loop {
        terminal.draw(|f| ui::draw(f, &mut app))?;
        // Blocks until the terminal has something: a key, a resize (redrawn above).
        let Event::Key(key) = event::read()? else {
            continue;
        };
        match app.key(key) {
            Effect::None => {}
            Effect::Quit => return Ok(()),
            Effect::Rescan => rescan(terminal, args, &mut app)?,
            Effect::Run(plan) => execute(terminal, &mut app, &plan)?,
        }
    }
}

/// Run the confirmed `plan` through the executor (re-judged on fresh facts, journaled as
/// `browse`), drawing each finished step; then the core's closing line.
fn execute(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    plan: &Plan,
) -> anyhow::Result<()> {
    let road = exec::Road::new(ScanOptions::from_env()?);
    let confirmed = Confirmed::of(plan, How::Answered);
    app.start_run(plan);
    terminal.draw(|f| ui::draw(f, app))?;
    let shared = RefCell::new((terminal, app));
    let listen = |ev: &ProgressEvent| {
        let mut s = shared.borrow_mut();
        let (t, a) = &mut *s;
        a.progress(ev);
        if matches!(ev, ProgressEvent::Finished { .. }) {
            let _ = t.draw(|f| ui::draw(f, a));
        }
    };
    let origin = exec::Origin::new("cli", "browse");
    let result = exec::run(plan, Some(confirmed), origin, road.sink(&listen));
    let (_, app) = shared.into_inner();
    app.finish(result.map_err(|e| e.to_string()));
    Ok(())
}
