//! A VM process or machine row a person points at, and what Stop, End process or Delete of it
//! plans.
//!
//! The tray and the window offer these three actions on one row at a time. Which plan a click
//! means — the machine that owns a VM, or ending an orphan; a machine of one product and never
//! its namesake of the other; whether a refused delete would be planned with cascade — is decided
//! here once, through the one planner, so no shell holds planning rules of its own.

pub use crate::compact::{apply_keeps_at, compact_plan};

use serde::{Deserialize, Serialize};

use crate::model::{Product, ScanReport, Scope, VmProcess};
use crate::plan::{Plan, Selection, SkippedAtPlan};

/// What the user asked to do with a VM or machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VmAction {
    /// Stop the machine the VM belongs to, through its product's CLI. For an orphan (no machine
    /// owns it) this is ending the process.
    Stop,
    /// End an orphaned VM process: SIGTERM, a grace period, SIGKILL, death confirmed.
    Reap,
    /// Delete the machine the VM belongs to (record and storage), through its product's CLI.
    Delete,
}

impl VmAction {
    /// The command as the journal records it: `stop`, `end process` or `delete`.
    pub fn command(self) -> &'static str {
        match self {
            VmAction::Delete => "delete",
            VmAction::Stop => "stop",
            VmAction::Reap => "end process",
        }
    }
}

/// The row a person pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A VM process, with the start time the user saw (a reused pid is another process).
    Process {
        /// Process id: with `start_time`, its identity.
        pid: u32,
        /// Its start time as the scan reported it (see [`VmProcess::start_time`]).
        start_time: u64,
    },
    /// A machine or sandbox of the scan's machine list.
    Machine {
        /// The product the machine belongs to (never its namesake of the other).
        product: Product,
        /// The smolvm machine name or Celesto sandbox id.
        name: String,
    },
}

/// The plan for one action on one target, and the words a confirmation of it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlan {
    /// The process the plan is about (for a machine row: its VM's, 0 when it has none).
    pub pid: u32,
    /// That process's start time (0 when there is none): with `pid`, its identity.
    pub start_time: u64,
    /// Set when the target was a machine row.
    pub machine: Option<(Product, String)>,
    /// The action the user asked for (End process of a machine row is stopping it).
    pub action: VmAction,
    /// What the plan does: the action asked for, or what it means for this target (Stop of a
    /// VM no machine owns is ending the process). The button, title and journal say this.
    pub does: VmAction,
    /// Whom it is about, e.g. `smol-machines smolvm web (pid 4321)`.
    pub target: String,
    /// The core plan, or why nothing was planned at all (the target is not in the scan, or the
    /// action does not apply to it).
    pub plan: Result<Plan, SkippedAtPlan>,
    /// Delete with `cascade` off was refused because machines are branched from it, and would
    /// be planned with it.
    pub cascade_available: bool,
}

impl TargetPlan {
    /// What was asked for but not planned, with the planner's reason.
    pub fn refused(&self) -> Vec<SkippedAtPlan> {
        match &self.plan {
            Ok(p) => p.skipped_at_plan.clone(),
            Err(s) => vec![s.clone()],
        }
    }

    /// The command as the journal records it (`stop`, `end process`, `delete`).
    pub fn command(&self) -> &'static str {
        self.does.command()
    }
}

/// The plan for `action` on `target` from `report`. Pure: looks at the report only.
pub fn plan_for(
    report: &ScanReport,
    target: &Target,
    action: VmAction,
    cascade: bool,
) -> TargetPlan {
    match target {
        Target::Process { pid, start_time } => {
            process_plan(report, *pid, *start_time, action, cascade)
        }
        Target::Machine { product, name } => machine_plan(report, *product, name, action, cascade),
    }
}

/// A VM of this HOME that a machine owns is stopped or deleted as that machine; an orphan — or a
/// VM that is not this HOME's, which the planner refuses — is planned as ending the process.
fn process_plan(
    report: &ScanReport,
    pid: u32,
    start_time: u64,
    action: VmAction,
    cascade: bool,
) -> TargetPlan {
    let refused = |does: VmAction, why: &str| TargetPlan {
        pid,
        start_time,
        machine: None,
        action,
        does,
        target: format!("pid {pid}"),
        plan: Err(SkippedAtPlan {
            id: format!("pid:{pid}"),
            why: why.into(),
        }),
        cascade_available: false,
    };
    let Some(p) = report
        .processes
        .iter()
        .find(|p| p.pid == pid && p.start_time == start_time)
    else {
        return refused(action, "that VM is not in the latest scan (it ended, or its pid belongs to another process now); nothing was planned");
    };
    let owner = owning_machine(report, p);
    let (selection, does) = match (action, owner) {
        (VmAction::Delete, Some(name)) => (deleting(name, cascade), VmAction::Delete),
        (VmAction::Delete, None) => {
            return refused(VmAction::Delete, "no machine of this HOME owns this VM, so there is no machine to delete; nothing was planned")
        }
        (VmAction::Stop, Some(name)) => (stopping(name), VmAction::Stop),
        // For another HOME's VM nothing is planned: it keeps the name the user clicked.
        _ => (
            Selection {
                reap_pids: vec![pid],
                ..Default::default()
            },
            if action == VmAction::Stop && p.scope != Scope::ThisHome {
                VmAction::Stop
            } else {
                VmAction::Reap
            },
        ),
    };
    let target = format!(
        "{} {} (pid {pid})",
        p.product.display_name(),
        p.owner.as_deref().unwrap_or("VM")
    );
    planned(
        report,
        (pid, start_time, None),
        (action, does, cascade),
        target,
        selection,
    )
}

/// Stop or Delete of the machine or sandbox `name` of `product`, as the machine list shows it:
/// through the planner's `stop_machines` / `delete_machines`, named with its product so a
/// namesake of the other product is never chosen.
fn machine_plan(
    report: &ScanReport,
    product: Product,
    name: &str,
    action: VmAction,
    cascade: bool,
) -> TargetPlan {
    let action = if action == VmAction::Reap {
        VmAction::Stop
    } else {
        action
    };
    let qualified = format!("{}:{name}", product.as_str());
    let Some(m) = report
        .machines
        .iter()
        .find(|m| m.product == product && m.name == name)
    else {
        return TargetPlan {
            pid: 0,
            start_time: 0,
            machine: Some((product, name.into())),
            action,
            does: action,
            target: format!("{} {name}", product.display_name()),
            plan: Err(SkippedAtPlan {
                id: format!("machine:{qualified}"),
                why: format!("no machine named '{name}' in the latest scan; nothing was planned"),
            }),
            cascade_available: false,
        };
    };
    let selection = match action {
        VmAction::Delete => deleting(qualified, cascade),
        _ => stopping(qualified),
    };
    planned(
        report,
        (
            m.pid.unwrap_or(0),
            m.pid_start_time.unwrap_or(0),
            Some((product, m.name.clone())),
        ),
        (action, action, cascade),
        format!("{} {}", product.display_name(), m.name),
        selection,
    )
}

/// The product-qualified name of the machine of this HOME that owns VM `p`, if one does.
fn owning_machine(report: &ScanReport, p: &VmProcess) -> Option<String> {
    let owner = p.owner.as_deref()?;
    report
        .machines
        .iter()
        .find(|m| {
            p.scope == Scope::ThisHome && !p.orphan && m.product == p.product && m.name == owner
        })
        .map(|m| format!("{}:{}", m.product.as_str(), m.name))
}

fn stopping(name: String) -> Selection {
    Selection {
        stop_machines: vec![name],
        ..Default::default()
    }
}

fn deleting(name: String, cascade: bool) -> Selection {
    Selection {
        delete_machines: vec![name],
        cascade,
        ..Default::default()
    }
}

/// Plan `selection`, and whether a refused delete would be planned with cascade.
fn planned(
    report: &ScanReport,
    (pid, start_time, machine): (u32, u64, Option<(Product, String)>),
    (action, does, cascade): (VmAction, VmAction, bool),
    target: String,
    selection: Selection,
) -> TargetPlan {
    let plan = Plan::from_scan(report, &selection);
    let cascade_available = action == VmAction::Delete
        && !cascade
        && plan.actions.is_empty()
        && !Plan::from_scan(
            report,
            &Selection {
                cascade: true,
                ..selection
            },
        )
        .actions
        .is_empty();
    TargetPlan {
        pid,
        start_time,
        machine,
        action,
        does,
        target,
        plan: Ok(plan),
        cascade_available,
    }
}
