//! The window's fixed words: every heading, label, button, empty state, toast and progress text
//! of the desktop window (`ui/`) that no scan or plan decides, in one closed table. The window
//! is sent the table once at start (the shell's `get_words`) and looks each word up by its key
//! (`w("nothing_to_reclaim")` in `ui/*.js`, `data-word="…"` in `ui/index.html`); it holds no
//! word of its own. A word that depends on data is a template whose holes (`{what}`) the window
//! fills with the data it was sent, as it is: `Keep {what}`.
//!
//! Words a surface shares with another come from where the other says them (the verdict's
//! label, a machine action's button, the scan line), so one thing is worded one way.

use std::collections::BTreeMap;

use crate::model::Verdict;

macro_rules! words {
    ($($(#[$m:meta])* $v:ident = $key:literal => $text:expr,)*) => {
        /// One of the window's fixed words, by its key.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Word {
            $($(#[$m])* #[doc = concat!("`", $key, "`")] $v,)*
        }

        impl Word {
            /// Every word, in the table's order.
            pub const ALL: &'static [Word] = &[$(Word::$v,)*];

            /// The key the window looks it up by.
            pub fn key(self) -> &'static str {
                match self {
                    $(Word::$v => $key,)*
                }
            }

            /// What a person reads; `{name}` marks a hole the window fills.
            pub fn text(self) -> &'static str {
                match self {
                    $(Word::$v => $text,)*
                }
            }
        }
    };
}

words! {
    // The navigation and the scan line.
    AppName = "app_name" => "Smolsweep",
    NavSections = "nav_sections" => "Sections",
    Overview = "overview" => "Overview",
    Findings = "findings" => "Findings",
    FindingsCount = "findings_count" => "findings",
    RunningVms = "running_vms" => crate::view::RUNNING_VMS,
    VmsCount = "vms_count" => "running VMs of this HOME",
    History = "history" => "History",
    Settings = "settings" => "Settings",
    UninstallSmolvm = "uninstall_smolvm" => "Uninstall SmolVM",
    RescanNow = "rescan_now" => "Rescan now",
    Scanning = "scanning" => crate::view::SCANNING,

    // Overview.
    CardReclaimable = "card_reclaimable" => crate::view::verdict_label(Verdict::Reclaimable, None),
    CardOptIn = "card_opt_in" => "Opt-in (caches, saved disks)",
    CardOrphans = "card_orphans" => "Orphaned VMs",
    SpaceByKind = "space_by_kind" => "Space by kind",
    SpaceByKindNote = "space_by_kind_note" => "Each slice is one kind, coloured by the verdict of most of its space, as the blocks below are.",
    NothingHoldsSpace = "nothing_holds_space" => "Nothing from either SmolVM holds any space.",
    TreemapHeading = "treemap_heading" => "Where the space is",
    TreemapNote = "treemap_note" => "Each block is one item, grouped by product and kind; its area is the space it takes on disk, its colour its verdict (green reclaimable, blue opt-in, brown kept or protected, grey unverified). Hover for the apparent size; click to select it.",
    NothingToDraw = "nothing_to_draw" => "Nothing to draw.",
    TileTip = "tile_tip" => "{path}\n{kind} · {verdict}\n{size} on disk, {apparent} apparent",
    TileSelect = "tile_select" => "{name}: {size}, {verdict}. Select it",
    TrendHeading = "trend_heading" => "Space over time",
    TrendTable = "trend_table" => "Space over time as a table",
    Reclaimed = "reclaimed" => "Reclaimed",
    FromCommandLine = "from_command_line" => "From the command line",
    ReviewFindings = "review_findings" => "Review findings",
    AutoWaits = "auto_waits" => "Automatic clean-up waits for you:",
    Review = "review" => "Review",
    SettingsAcceptNewer = "settings_accept_newer" => "Settings: accept newer {product}",

    // Findings.
    ReclaimButton = "reclaim_button" => crate::view::RECLAIM,
    FindingsNote = "findings_note" => "Reclaimable items are selected. Opt-in items (caches, saved disks) are safe to delete but only when you choose them. Protected and unverifiable items, and what you keep, are never deleted. Groups are ordered by the space they free.",
    FilterFindings = "filter_findings" => "Filter findings",
    OlderThan = "older_than" => "Older than",
    AgeExample = "age_example" => "7d",
    AtLeast = "at_least" => "At least",
    SizeExample = "size_example" => "100M",
    Product = "product" => "Product",
    Both = "both" => "Both",
    Kind = "kind" => "Kind",
    EveryKind = "every_kind" => "Every kind",
    Clear = "clear" => "Clear",
    FilterHint = "filter_hint" => "Ages like 7d, 12h or 2w; sizes like 100M or 1.5G. Reclaim selects only what the filter shows.",
    NothingToReclaim = "nothing_to_reclaim" => "Nothing to reclaim.",
    NotInList = "not_in_list" => "That item is not in the list",
    SelectPath = "select_path" => "Select {path}",
    Apparent = "apparent" => "{size} apparent",
    KeptByYou = "kept_by_you" => "kept by you",
    NothingSelected = "nothing_selected" => "Nothing selected",
    Keep = "keep" => "Keep",
    KeepWhat = "keep_what" => "Keep {what}",
    KeepTitle = "keep_title" => "Never plan, count or notify this again",
    WhyOptional = "why_optional" => "why (optional)",
    WhyKeep = "why_keep" => "Why keep {what}",
    KeepNow = "keep_now" => "Keep {what} now",
    KeptWhat = "kept_what" => "Kept {what}",
    Why = "why" => "Why?",
    WhyWhat = "why_what" => "Why? {what}",
    WhyTitle = "why_title" => "How Smolsweep judges it, and on what evidence",
    Copy = "copy" => "Copy",
    CopyPath = "copy_path" => "Copy path {path}",
    CopyFullPath = "copy_full_path" => "Copy the full path",
    CopiedPath = "copied_path" => "Copied {path}",
    Close = "close" => "Close",

    // Running VMs.
    VmsNote = "vms_note" => "Machines and sandboxes of both SmolVMs, and their VM processes. Stop and Delete go through the product's own command line. An orphaned VM process has no owner in its product's inventory: it keeps memory, CPU and deleted disk space until ended. A VM of another HOME is shown only.",
    NoVms = "no_vms" => "No machine or sandbox, and no SmolVM VM is running.",
    Pid = "pid" => "pid {pid}",
    Process = "process" => "process {pid}",
    HoldsDeleted = "holds_deleted" => "holds {size} of deleted files",
    Orphaned = "orphaned" => "orphaned",
    Running = "running" => "running",
    Stop = "stop" => crate::view::STOP,
    Delete = "delete" => crate::view::DELETE,
    EndProcess = "end_process" => "End process",
    EndProcessOf = "end_process_of" => "End process {pid} ({who})",
    VmProcesses = "vm_processes" => "VM processes",

    // The confirmation and a reclaim's run.
    Reclaim = "reclaim" => "Reclaim",
    AboutToFree = "about_to_free" => "; about {estimate} to free",
    NotPlanned = "not_planned" => crate::view::NOT_PLANNED,
    Cascade = "cascade" => "Also delete the machines branched from it ({flag}); the plan names each one",
    Cancel = "cancel" => "Cancel",
    Starting = "starting" => "Starting…",
    ProgressLine = "progress_line" => "{done} of {total}: {path}",
    ReclaimFailed = "reclaim_failed" => "Reclaim failed",
    FreedMeasured = "freed_measured" => "Freed {measured}",

    // History.
    HistoryNote = "history_note" => "Every run of a plan — from this window, the tray, the command line or the uninstall wizard — with what each action did.",
    HistoryJournal = "history_journal" => "Journal: {journal} (also read by {command}).",
    HistoryCommand = "history_command" => "smolsweep history",
    HistoryLegacy = "history_legacy" => "Reclaims recorded by older versions of this window are in {legacy}; they were not imported.",
    NothingHasRun = "nothing_has_run" => "Nothing has run yet.",
    RunsNewestFirst = "runs_newest_first" => "Runs, newest first",

    // Settings.
    ScanEvery = "scan_every" => "Scan every",
    Every5Minutes = "every_5_minutes" => "5 minutes",
    Every15Minutes = "every_15_minutes" => "15 minutes",
    EveryHour = "every_hour" => "hour",
    Every6Hours = "every_6_hours" => "6 hours",
    NotifyMe = "notify_me" => "Notify me when new orphans appear and after a reclaim",
    StartAtLogin = "start_at_login" => "Start Smolsweep at login",
    NewerVersions = "newer_versions" => "Newer versions than Smolsweep knows",
    NewerNote = "newer_note" => "A product newer than the versions Smolsweep was verified on is shown, but nothing of it is reclaimable. Accepting the risk judges it with the newest rules Smolsweep knows.",
    AcceptNewer = "accept_newer" => "Accept newer {product}",
    TrayIncludes = "tray_includes" => "\"Reclaim\" in the tray menu also includes",
    IncludeCaches = "include_caches" => "Rebuildable caches (images, packs, registry blobs)",
    IncludeSavedDisks = "include_saved_disks" => "Disks you chose to keep (Celesto {file})",
    IncludeResidue = "include_residue" => "Residue that may hold data (firmware NVRAM, snapshots)",
    AutoHeading = "auto_heading" => "Automatic clean-up",
    AutoNote = "auto_note" => "After a scheduled scan, reclaim orphaned disks, their logs and companions, and machine directories with no record — only what is at least as old as you say. The first run is shown here to confirm once; later runs go by themselves; above the cap it asks. Off until you turn it on. The same policy is saved for {command}.",
    AutoEnable = "auto_enable" => "Clean up automatically",
    AutoOlderThan = "auto_older_than" => "Only items older than",
    AutoMinAge = "auto_min_age" => "Minimum age",
    AutoAskAbove = "auto_ask_above" => "Ask me when a run would free more than",
    AutoCap = "auto_cap" => "Cap per run",
    AutoCaches = "auto_caches" => "Also rebuildable caches",
    AutoSavedDisks = "auto_saved_disks" => "Also disks you chose to keep (Celesto {file})",
    AutoResidue = "auto_residue" => "Also residue that may hold data",
    KeptByYouHeading = "kept_by_you_heading" => "Kept by you",
    NothingKept = "nothing_kept" => "Nothing is kept. Use Keep on a finding or a machine.",
    StopKeeping = "stop_keeping" => "Stop keeping {what}",
    Remove = "remove" => "Remove",
    Saved = "saved" => "Saved.",

    // The uninstall wizard.
    WizardSteps = "wizard_steps" => "Steps",
    StepPreflight = "step_preflight" => "Preflight",
    StepChoices = "step_choices" => "Choices",
    StepPlan = "step_plan" => "Plan",
    StepConfirm = "step_confirm" => "Confirm",
    StepProgress = "step_progress" => "Progress",
    StepProof = "step_proof" => "Proof",
    PreflightNote = "preflight_note" => "What is installed and what it left, found without changing anything: no file is written and neither product's CLI is run.",
    Looking = "looking" => "Looking…",
    LookAgain = "look_again" => "Look again",
    NextChoices = "next_choices" => "Next: choices",
    Uninstall = "uninstall" => "Uninstall",
    SmolvmIs = "smolvm_is" => "(the Rust CLI on libkrun: {command})",
    CelestoIs = "celesto_is" => "(the Python SDK/CLI: {command})",
    DotSmolvmShared = "dot_smolvm_shared" => "{dir} is used by both products: only what belongs to the chosen product is removed from it.",
    AlsoRemove = "also_remove" => "Also remove (left in place unless you ask)",
    RemoveCredentials = "remove_credentials" => "Credentials and keys: registry logins ({dir}), Celesto credentials and SSH keys",
    RemovePathBlock = "remove_path_block" => "The {block} PATH lines in shell startup files (the file is backed up first; every other line stays as it is)",
    Back = "back" => "Back",
    NextPlan = "next_plan" => "Next: review the plan",
    PlanNote = "plan_note" => "Every step, in the order it runs. Untick a step to skip it.",
    Continue = "continue" => "Continue…",
    Working = "working" => "Working…",
    Report = "report" => "Report",
    UninstallReport = "uninstall_report" => "Uninstall report",
    VerifyAgain = "verify_again" => "Verify again",
    StartOver = "start_over" => "Start over",
    CopyReport = "copy_report" => "Copy report",
    Copied = "copied" => "Copied",
    Selected = "selected" => "Selected",
    CopiedClipboard = "copied_clipboard" => "Copied to the clipboard.",
    SelectedPress = "selected_press" => "Selected: press Ctrl+C (⌘C) to copy.",
    NoneFound = "none_found" => "None found.",
    NoneAtAll = "none" => "None.",
    AuditedHome = "audited_home" => "Audited home: {home}",
    Installations = "installations" => "Installations",
    NoInstallation = "no_installation" => "No installation found.",
    StateDirectories = "state_directories" => "State directories",
    NoStateDirectory = "no_state_directory" => "No state directory found.",
    Machines = "machines" => "Machines",
    NoMachine = "no_machine" => "No machine.",
    VmProcessesHere = "vm_processes_here" => "VM processes of this home",
    NoVmProcess = "no_vm_process" => "No VM process is running.",
    Mounts = "mounts" => "Mounts",
    NoMount = "no_mount" => "No mount.",
    MountTableUnread = "mount_table_unread" => "The mount table could not be read.",
    Launchers = "launchers" => "Launchers",
    NoLauncher = "no_launcher" => "No launcher.",
    PathBlocks = "path_blocks" => "PATH blocks",
    NoPathBlock = "no_path_block" => "No PATH block.",
    CredentialsAndKeys = "credentials_and_keys" => "Credentials and keys (left in place unless you ask)",
    SystemFiles = "system_files" => "System files that need root",
    NeverRunsThese = "never_runs_these" => "Smolsweep never runs these: copy them and run them yourself if you want them gone.",
    LeftInPlace = "left_in_place" => "Left in place",
    RunYourself = "run_yourself" => "Run these yourself (Smolsweep does not)",
    NothingToDo = "nothing_to_do" => "Nothing to do: nothing of the chosen product was found.",
    SkippedUnticked = "skipped_unticked" => "Skipped (unticked)",
    StoppingThenRemoving = "stopping_then_removing" => "Stopping machines and processes, then removing files…",
    NothingWasDone = "nothing_was_done" => "Nothing was done: {error}",
    UninstalledClean = "uninstalled_clean" => "Uninstalled: nothing is left",
    SomethingLeft = "something_left" => "Something is left",
    ProofResult = "proof_result" => "result={result}",
    ProofHome = "proof_home" => "audited_home={home}",
    Backup = "backup" => "Backup: {path}",
    Checks = "checks" => "Checks",
    Fail = "fail" => "FAIL",
    Found = "found" => "found: {value}",
    Remains = "remains" => "remains: {what} — {fix}",
    Fix = "fix" => "fix:",
    Steps = "steps" => "Steps",
}

/// The table the window is sent: every word by its key.
pub fn window_words() -> BTreeMap<&'static str, &'static str> {
    Word::ALL.iter().map(|w| (w.key(), w.text())).collect()
}

/// The holes of a word's text (`{what}` → `what`), in order.
pub fn holes(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        let Some(j) = after.find('}') else { break };
        out.push(&after[..j]);
        rest = &after[j + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is closed and well formed: one key per word, keys as the window writes them,
    /// every text non-empty and every hole a name.
    #[test]
    fn every_word_has_one_key_and_well_formed_holes() {
        let t = window_words();
        assert_eq!(t.len(), Word::ALL.len(), "a key is used twice");
        for w in Word::ALL {
            let k = w.key();
            assert!(
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{k}"
            );
            assert!(!w.text().trim().is_empty(), "{k}");
            assert_eq!(
                w.text().matches('{').count(),
                w.text().matches('}').count(),
                "{k}"
            );
            for h in holes(w.text()) {
                assert!(
                    !h.is_empty() && h.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                    "{k}: {h:?}"
                );
            }
        }
        assert_eq!(holes("Keep {what} now"), ["what"]);
        assert_eq!(t["nothing_to_reclaim"], "Nothing to reclaim.");
    }

    /// A word the window shares with another surface is that surface's word.
    #[test]
    fn shared_words_are_the_other_surfaces_words() {
        assert_eq!(
            Word::Scanning.text(),
            crate::view::scan_state(true, None, false, 0)
        );
        assert_eq!(Word::ReclaimButton.text(), crate::view::reclaim_label(None));
        assert_eq!(Word::CardReclaimable.text(), "Reclaimable");
    }
}
