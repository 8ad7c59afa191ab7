//! The compaction figure in words: space inside the disks of stopped machines and saved disks
//! that the guest has freed. Its own figure, opt-in, never in the reclaimable total.

use serde::Serialize;

use super::{bytes, plural};
use crate::model::{CompactReport, DiskEstimate, ScanReport};

/// The compaction figure as every surface shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CompactView {
    /// Compactable bytes of every disk estimated.
    pub bytes: u64,
    /// `bytes` in words.
    pub size: String,
    /// How many disks were estimated.
    pub disks: usize,
    /// How many of them have something to compact.
    pub compactable_disks: usize,
    /// How many it cannot tell for.
    pub cannot_tell_disks: usize,
    /// The first screen's line ("Compactable: 31 MB inside 2 disks …"), absent when there is
    /// nothing to compact.
    pub line: Option<String>,
    /// The same for the full listing, also when there is nothing to compact ("Compactable:
    /// nothing inside 3 disks …; cannot tell for 2 others."), absent when no disk was
    /// estimated.
    pub detail: Option<String>,
    /// One sentence per disk, largest first.
    pub disk_lines: Vec<String>,
    /// The tray's item ("Compact 3 disks: 12 GB"), absent when nothing is compactable.
    pub tray_label: Option<String>,
}

/// Who a disk belongs to, as the lines name it (`smolvm:web`, `celesto:abc (saved)`).
fn owner(d: &DiskEstimate) -> String {
    let name = d.owner.as_deref().map(crate::pathser::escape_text);
    let saved = if d.saved { " (saved)" } else { "" };
    format!(
        "{}:{}{saved}",
        d.product.as_str(),
        name.as_deref().unwrap_or("?")
    )
}

/// What compacting one disk could give back, one sentence.
pub fn disk_sentence(d: &DiskEstimate) -> String {
    let file = d
        .path
        .file_name()
        .map(|n| crate::pathser::shown(std::path::Path::new(n)))
        .unwrap_or_default();
    if let Some(rule) = &d.kept {
        return format!("{file}: {}; never compacted.", crate::keep::kept_why(rule));
    }
    match (&d.cannot_tell, d.compactable_bytes) {
        (Some(why), _) => format!(
            "{file}: cannot tell what compacting would give back ({}).",
            crate::pathser::escape_text(why)
        ),
        (None, 0) => format!(
            "{file}: nothing to compact ({} allocated, none of it free inside the guest).",
            bytes(d.allocated_bytes)
        ),
        (None, n) => format!(
            "{file}: {} of its {} allocated is free inside the guest; compacting would give it \
             back (opt-in, not in the reclaimable total).{}",
            bytes(n),
            bytes(d.allocated_bytes),
            match &d.needs {
                Some(needs) => format!(" To compact it: {}.", crate::pathser::escape_text(needs)),
                None => String::new(),
            }
        ),
    }
}

/// The view of a scan's estimates.
pub fn compact_view(r: &ScanReport) -> CompactView {
    let c: &CompactReport = &r.compact;
    let mut disks: Vec<&DiskEstimate> = c.disks.iter().collect();
    disks.sort_by_key(|d| std::cmp::Reverse(d.compactable_bytes));
    // A kept disk is listed, but counts nowhere.
    let n = disks.iter().filter(|d| d.kept.is_none()).count();
    let cannot = c.cannot_tell_disks as usize;
    let known = n - cannot;
    let detail =
        (n > 0).then(|| match (c.compactable_bytes, cannot) {
            (0, 0) => format!(
                "Compactable: nothing inside {} of stopped machines and saved disks.",
                plural(n, "disk", "disks")
            ),
            (0, m) if m == n => format!(
                "Compactable: cannot tell for {} of stopped machines and saved disks.",
                plural(n, "disk", "disks")
            ),
            (0, m) => format!(
                "Compactable: nothing inside {} of stopped machines and saved disks; cannot tell \
             for {}.",
                plural(known, "disk", "disks"),
                plural(m, "other", "others")
            ),
            (b, m) => format!(
            "Compactable: {} inside {} of stopped machines and saved disks (opt-in, not in the \
             reclaimable total){}.",
            bytes(b),
            plural(c.compactable_disks as usize, "disk", "disks"),
            match m {
                0 => String::new(),
                m => format!("; cannot tell for {}", plural(m, "other disk", "other disks")),
            }
        ),
        });
    CompactView {
        bytes: c.compactable_bytes,
        size: bytes(c.compactable_bytes),
        disks: n,
        compactable_disks: c.compactable_disks as usize,
        cannot_tell_disks: cannot,
        line: detail.clone().filter(|_| c.compactable_bytes > 0),
        detail,
        disk_lines: disks
            .iter()
            .map(|d| format!("{} {}", owner(d), disk_sentence(d)))
            .collect(),
        tray_label: (c.compactable_bytes > 0).then(|| {
            format!(
                "Compact {}: {}",
                plural(c.compactable_disks as usize, "disk", "disks"),
                bytes(c.compactable_bytes)
            )
        }),
    }
}
