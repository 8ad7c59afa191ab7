//! What a person is told about choices not yet acted on (issue 31, item 5: a browser never
//! loses a choice): the question before leaving with marked items, a group's count of marked
//! items, and the words of the actions on a machine or VM process row. The terminal browser
//! and the window show these words; neither writes its own.

/// "2 marked": a group's count of marked items, shown open or closed.
pub fn marked_count(n: usize) -> String {
    format!("{n} marked")
}

/// The question before leaving with marks pending: "Quit and drop 3 marked items (about
/// 1.2 MB)? Nothing has been deleted." (`estimate`: the marked items' plan's, in words).
pub fn quit_question(marked: usize, estimate: &str) -> String {
    let items = match marked {
        1 => "1 marked item".to_string(),
        n => format!("{n} marked items"),
    };
    format!("Quit and drop {items} (about {estimate} to free)? Nothing has been deleted.")
}

/// The keys that answer [`quit_question`].
pub const QUIT_KEYS: &str = "y quit  n Esc stay (the marks stay)";

/// The heading of the VM process rows.
pub const PROCESSES_HEADING: &str = "VM processes";

/// What a machine row offers, as the window's buttons say it (`s` Stop, `x` Delete).
pub const MACHINE_ACTIONS: &str = "s Stop  x Delete  c Compact";

/// What the VM process rows offer: an orphan is ended, a VM its record owns is stopped through
/// its machine; each has one action.
pub const PROCESS_ACTIONS: &str = "e End process (orphaned)  s Stop (its machine's)";

/// What an orphaned VM process row offers: its one action.
pub const ORPHAN_ACTIONS: &str = "e End process";

/// Where `c` works: "c compacts the disks of a machine or sandbox: move to its row."
pub const COMPACT_WHERE: &str = "c compacts the disks of a machine or sandbox: move to its row.";

/// What one machine row offers, the window's buttons in its order: Stop when it runs, Delete,
/// Compact when its disks hold space to give back; `None` when a keep rule keeps it.
pub fn machine_actions(can_stop: bool, can_delete: bool, can_compact: bool) -> Option<String> {
    let mut keys = Vec::new();
    if can_stop {
        keys.push("s Stop");
    }
    if can_delete {
        keys.push("x Delete");
    }
    if can_compact {
        keys.push("c Compact");
    }
    (!keys.is_empty()).then(|| keys.join("  "))
}

/// Why a machine or process row offers no action: "Nothing to do here: it is another HOME's
/// VM process (only its owner can end it)."
pub fn no_action(why: &str) -> String {
    format!("Nothing to do here: {why}.")
}

/// What Space says on a machine or VM process row: they are acted on, not marked.
pub fn act_instead(actions: &str) -> String {
    format!("Machines, sandboxes and VM processes are not marked; act on one: {actions}.")
}

/// What a VM process row of a machine offers when it is not an orphan (its machine is stopped).
pub const PROCESS_STOP_ONLY: &str = "s Stop";

/// "It holds 1.2 GB of deleted files.": a VM process's detail.
pub fn holds_deleted(size: &str) -> String {
    format!("It holds {size} of deleted files.")
}
