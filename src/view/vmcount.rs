//! One count of running VMs (issue 39, item 3), defined here once for every surface: the CLI's
//! first screen, the tray's menu, the window's badge and `browse` show the same numbers with the
//! same split. It counts this HOME's machines and sandboxes whose VM is alive, and this HOME's
//! orphaned VM processes (no record owns them); other HOMEs' VM processes are apart, with their
//! own count, and never in the first number.

use serde::Serialize;

use crate::model::{Product, ScanReport, Scope};

/// How many VMs run, and of what.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VmCount {
    /// This HOME's Celesto sandboxes whose VM is alive.
    pub sandboxes: usize,
    /// This HOME's smolvm machines whose VM is alive.
    pub machines: usize,
    /// This HOME's VM processes that no record owns (kept ones included: they run).
    pub orphans: usize,
    /// VM processes of other HOMEs: shown, never acted on, never in [`VmCount::running`].
    pub other_homes: usize,
    /// This HOME's running VMs: the three above added (the window's badge).
    pub running: usize,
}

impl VmCount {
    /// The count of a scan (as it is shown: a filtered report counts what the filter shows).
    pub fn of(r: &ScanReport) -> VmCount {
        let alive = |p: Product| {
            r.machines
                .iter()
                .filter(|m| m.product == p && m.alive)
                .count()
        };
        let this_home = |p: &&crate::model::VmProcess| p.scope == Scope::ThisHome;
        let mut c = VmCount {
            sandboxes: alive(Product::Celesto),
            machines: alive(Product::Smolvm),
            running: 0,
            orphans: r
                .processes
                .iter()
                .filter(this_home)
                .filter(|p| p.orphan)
                .count(),
            other_homes: r.processes.iter().filter(|p| !this_home(p)).count(),
        };
        c.running = c.sandboxes + c.machines + c.orphans;
        c
    }

    /// This HOME's running VMs: machines, sandboxes and orphaned VM processes.
    pub fn running(&self) -> usize {
        self.sandboxes + self.machines + self.orphans
    }

    /// The split, each part in its one noun: "1 sandbox, 2 machines, 1 orphaned" (only the parts
    /// there are; "none" when nothing runs).
    pub fn split(&self) -> String {
        let mut parts = Vec::new();
        if self.sandboxes > 0 {
            parts.push(Product::Celesto.count(self.sandboxes));
        }
        if self.machines > 0 {
            parts.push(Product::Smolvm.count(self.machines));
        }
        if self.orphans > 0 {
            parts.push(format!("{} orphaned", self.orphans));
        }
        match parts.is_empty() {
            true => "none".into(),
            false => parts.join(", "),
        }
    }

    /// "Running VMs: 4 (1 sandbox, 2 machines, 1 orphaned)", or "Running VMs: none": the line
    /// every surface heads its VMs with.
    pub fn line(&self) -> String {
        match self.running() {
            0 => format!("{}: none", RUNNING_VMS),
            n => format!("{RUNNING_VMS}: {n} ({})", self.split()),
        }
    }

    /// "VM processes of other HOMEs: 2 (shown, never acted on)"; `None` when there are none.
    pub fn other_homes_line(&self) -> Option<String> {
        (self.other_homes > 0).then(|| format!("{OTHER_HOMES}: {}", self.other_homes))
    }
}

/// What the running VMs are called on every surface.
pub const RUNNING_VMS: &str = "Running VMs";
/// What other HOMEs' VM processes are called on every surface.
pub const OTHER_HOMES: &str = "VM processes of other HOMEs";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_says_its_split_in_each_products_noun() {
        let c = VmCount {
            sandboxes: 1,
            machines: 2,
            orphans: 1,
            other_homes: 3,
            running: 4,
        };
        assert_eq!(c.running(), 4);
        assert_eq!(
            c.line(),
            "Running VMs: 4 (1 sandbox, 2 machines, 1 orphaned)"
        );
        assert_eq!(
            c.other_homes_line().unwrap(),
            "VM processes of other HOMEs: 3"
        );
        assert_eq!(VmCount::default().line(), "Running VMs: none");
        assert_eq!(VmCount::default().other_homes_line(), None);
    }
}
