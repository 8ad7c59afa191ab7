//! Items: what a person keeps, filters and deletes as one. A finding is one path; an item is a
//! sandbox's or machine's storage as a whole: a Celesto disk with its companions (the
//! `.retained` marker among them), its console log, the firmware and host keys kept while it is
//! saved, and its lock files; a smolvm machine directory. What part each kind plays is the
//! closed table [`FindingKind::part`](crate::kind::FindingKind); this module groups a report's
//! findings by it, once, for every rule that acts on items: keep rules (a rule on the disk keeps
//! all of it), filters (they select whole items), the planner and the executor (an item goes
//! whole, or only members whose removal changes nothing that stays).

use std::collections::HashMap;
use std::path::Path;

use crate::kind::{FindingKind, Part};
use crate::model::{Finding, Product};

/// What a member is to its item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Role {
    /// Judged by the item's principal (a companion, the log, what stays while a disk is saved):
    /// removing the principal first would change what it is.
    Dependent,
    /// Kept and selected with the item, judged on its own (a lock file).
    GoesWith,
    /// What the item is (the disk, the machine directory).
    Principal,
    /// What the principal needs to stay what it is (a saved disk's `.retained` marker).
    Needs,
}

impl Role {
    /// Whether removing this member while another member stays can change that member's
    /// verdict or kind.
    pub(crate) fn others_depend_on_it(self) -> bool {
        matches!(self, Role::Principal | Role::Needs)
    }
    /// Whether this member's verdict or kind depends on the rest of its item.
    pub(crate) fn depends_on_others(self) -> bool {
        !matches!(self, Role::GoesWith)
    }
}

/// A report's findings grouped into items, by index into the findings they were made from.
pub(crate) struct Items {
    /// The item (index into `groups`) and role of each finding; `None` for an item of one.
    of: Vec<Option<(usize, Role)>>,
    groups: Vec<Vec<usize>>,
}

impl Items {
    /// Group `findings` into items: the findings of one sandbox or machine (product and owner)
    /// that have a principal among them. Pure.
    pub(crate) fn of(findings: &[Finding]) -> Items {
        let mut by_owner: HashMap<(Product, String), Vec<usize>> = HashMap::new();
        for (i, f) in findings.iter().enumerate() {
            if let (Some(o), false) = (item_key(f), f.kind.part() == Part::Alone) {
                by_owner.entry((f.product, o)).or_default().push(i);
            }
        }
        let mut items = Items {
            of: vec![None; findings.len()],
            groups: Vec::new(),
        };
        let mut keys: Vec<_> = by_owner.into_iter().collect();
        keys.sort_unstable_by_key(|(_, m)| m[0]);
        for (_, members) in keys {
            let has = |k: FindingKind| members.iter().any(|&i| findings[i].kind == k);
            if !members
                .iter()
                .any(|&i| findings[i].kind.part() == Part::Principal)
            {
                continue;
            }
            let saved = has(FindingKind::CelestoSavedDisk);
            let g = items.groups.len();
            let mut group = Vec::new();
            for i in members {
                if let Some(role) = role_of(&findings[i], saved) {
                    items.of[i] = Some((g, role));
                    group.push(i);
                }
            }
            items.groups.push(group);
        }
        items
    }

    /// The role of finding `i` in its item (`None`: an item of its own).
    pub(crate) fn role(&self, i: usize) -> Option<Role> {
        self.of.get(i).copied().flatten().map(|(_, r)| r)
    }

    /// Every member of finding `i`'s item, `i` included (empty for an item of its own).
    pub(crate) fn members(&self, i: usize) -> &[usize] {
        match self.of.get(i).copied().flatten() {
            Some((g, _)) => &self.groups[g],
            None => &[],
        }
    }

    /// The members of each item, each a list of finding indices.
    pub(crate) fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// A member of `i`'s item that would stay while `i` goes and whose verdict or kind depends
    /// on it (`going` tells what else goes with it): removing `i` then would make that member
    /// more deletable than it is. `None` when `i` may go.
    pub(crate) fn survivor_of<'f>(
        &self,
        findings: &'f [Finding],
        i: usize,
        going: &dyn Fn(&Finding) -> bool,
    ) -> Option<&'f Finding> {
        if !self.role(i).is_some_and(Role::others_depend_on_it) {
            return None;
        }
        self.members(i)
            .iter()
            .filter(|&&j| j != i)
            .filter(|&&j| self.role(j).is_some_and(Role::depends_on_others))
            .map(|&j| &findings[j])
            .find(|m| !going(m))
    }

    /// The principal of `i`'s item, when `i` is not one itself.
    pub(crate) fn principal_of<'f>(
        &self,
        findings: &'f [Finding],
        i: usize,
    ) -> Option<&'f Finding> {
        if self.role(i) == Some(Role::Principal) {
            return None;
        }
        self.members(i)
            .iter()
            .find(|&&j| self.role(j) == Some(Role::Principal))
            .map(|&j| &findings[j])
    }
}

/// Hold items together in a report: a disk (or its marker) that others of its item are judged
/// by is protected while one of them is (needed by a surviving disk, in use, unverifiable), so
/// the scan never counts as reclaimable what no plan would take. Pure and idempotent.
pub(crate) fn hold_together(report: &mut crate::model::ScanReport) {
    use crate::model::Verdict;
    let items = Items::of(&report.findings);
    let stays = |f: &Finding| matches!(f.verdict, Verdict::Protected | Verdict::Unknown);
    let held: Vec<(usize, String)> = (0..report.findings.len())
        .filter(|&i| !stays(&report.findings[i]))
        .filter_map(|i| {
            let s = items.survivor_of(&report.findings, i, &|m| !stays(m))?;
            Some((
                i,
                format!(
                    "{} of the same item stays ({}), and this goes only with it.",
                    crate::pathser::shown(&s.path),
                    s.kind.label().to_lowercase()
                ),
            ))
        })
        .collect();
    for (i, why) in held {
        let f = &mut report.findings[i];
        f.verdict = Verdict::Protected;
        f.opt_in_class = None;
        f.reason = format!("{why} {}", f.reason);
    }
}

/// What binds the members of `f`'s item: its sandbox or machine, or for a shared image store
/// entry and its records (`_shared/<crc8>` and `_shared/<crc8>.*`, which have no owner) the
/// entry's path.
fn item_key(f: &Finding) -> Option<String> {
    use FindingKind as K;
    match f.kind {
        K::SmolvmSharedPack | K::SmolvmSharedPackSidecar => {
            let name = f.path.file_name()?.to_str()?;
            let crc = name.split('.').next()?;
            Some(format!("\0{}", f.path.with_file_name(crc).display()))
        }
        _ => f.owner.clone(),
    }
}

/// The role of `f` in an item with a principal (`saved`: the item's disk is a saved one).
fn role_of(f: &Finding, saved: bool) -> Option<Role> {
    match f.kind.part() {
        Part::Principal => Some(Role::Principal),
        Part::Companion if is_marker(&f.path) => Some(Role::Needs),
        Part::Companion | Part::Log => Some(Role::Dependent),
        Part::WhileSaved => saved.then_some(Role::Dependent),
        Part::Lock => Some(Role::GoesWith),
        Part::Alone => None,
    }
}

/// Whether `path` is a disk's `.retained` marker (`<disk>.retained`).
pub(crate) fn is_marker(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "retained")
}

/// The sentence that says why `f` is not removed: `survivor` stays and depends on it.
pub(crate) fn survivor_why(f: &Finding, survivor: &Finding) -> String {
    let what = if is_marker(&f.path) {
        "the marker that makes its disk a saved one"
    } else {
        "what the rest of its item is judged by"
    };
    format!(
        "{what}, and {} of the same item stays ({}); removing this first would make that more deletable, so it is not removed",
        crate::pathser::shown(&survivor.path),
        survivor.kind.label().to_lowercase()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;

    fn f(kind: FindingKind, path: &str, owner: Option<&str>) -> Finding {
        Finding {
            owner: owner.map(str::to_string),
            apparent_bytes: 1,
            allocated_bytes: 1,
            ..Finding::new(path, kind.product(), kind, path, Verdict::OptIn)
        }
    }

    #[test]
    fn a_saved_disk_is_one_item_with_its_marker_companions_log_firmware_and_lock() {
        use FindingKind as K;
        let fs = vec![
            f(K::CelestoSavedDisk, "/d/disks/a.qcow2", Some("a")),
            f(
                K::CelestoSavedCompanion,
                "/d/disks/a.qcow2.retained",
                Some("a"),
            ),
            f(K::CelestoSavedCompanion, "/d/disks/a.qcow2.bak", Some("a")),
            f(K::CelestoSavedLog, "/d/a.log", Some("a")),
            f(K::CelestoFirmwareResidue, "/d/firmware/a", Some("a")),
            f(K::CelestoLockResidue, "/d/locks/a.create.lock", Some("a")),
            f(K::CelestoSnapshot, "/d/snapshots/s1", Some("a")),
            f(K::CelestoOrphanLog, "/d/b.log", Some("b")),
            f(K::CelestoFirmwareResidue, "/d/firmware/c", Some("c")),
            f(K::CelestoOrphanDisk, "/d/disks/c.qcow2", Some("c")),
        ];
        let items = Items::of(&fs);
        let roles: Vec<_> = (0..fs.len()).map(|i| items.role(i)).collect();
        assert_eq!(
            roles,
            vec![
                Some(Role::Principal),
                Some(Role::Needs),
                Some(Role::Dependent),
                Some(Role::Dependent),
                Some(Role::Dependent),
                Some(Role::GoesWith),
                None,
                None, // a log whose disk is gone is an item of its own
                None, // firmware of a sandbox whose disk is not saved is judged on its own
                Some(Role::Principal),
            ]
        );
        assert_eq!(items.members(0), &[0, 1, 2, 3, 4, 5]);
        // The disk may not go while its log stays; the log may go while the disk stays.
        let log_stays = |m: &Finding| m.kind != K::CelestoSavedLog;
        assert_eq!(
            items.survivor_of(&fs, 0, &log_stays).map(|m| m.id.as_str()),
            Some("/d/a.log")
        );
        assert!(items.survivor_of(&fs, 3, &|_| false).is_none());
        // The marker goes only with everything that depends on it; the lock never holds it.
        let all_but_lock = |m: &Finding| m.kind != K::CelestoLockResidue;
        assert!(items.survivor_of(&fs, 1, &all_but_lock).is_none());
        assert_eq!(
            items.principal_of(&fs, 3).map(|m| m.id.as_str()),
            Some("/d/disks/a.qcow2")
        );
    }
}
