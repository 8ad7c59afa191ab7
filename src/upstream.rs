//! What Smolsweep knows of each upstream product, per verified version, as data: the newest
//! versions its rules were verified against, and the inventories (where each lives, what its
//! file is called, its schema: tables and `user_version`). A new upstream release is a change here plus a fixture. Also how a
//! sentence's upstream bug references (`B10`) are split out of it for the JSON's `refs`.
//!
//! Facts from `shared/reference` (celesto-smolvm.md §3, smol-machines-smolvm.md §2.5).

use std::path::{Path, PathBuf};

use crate::model::Product;

/// The newest version of each product the rules were verified against. A newer install is
/// shown, but nothing of it is reclaimable until Smolsweep knows it (see [`drift`]).
pub(crate) const VERIFIED: &[(Product, &str, &str)] = &[
    (Product::Celesto, "celesto", "0.1.10"),
    // PyPI `smolvm`, Celesto's predecessor (its `smolvm.db` is read with Celesto's rules).
    (Product::Celesto, "smolvm (PyPI)", "0.0.36"),
    (Product::Smolvm, "smolvm", "1.32.2"),
];

/// The schema an inventory must have for its rows to be trusted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema {
    pub product: Product,
    /// Every table the product writes in it; any other table means a layout Smolsweep does
    /// not know (rows may have moved there).
    pub tables: &'static [&'static str],
    /// `PRAGMA user_version` values of the verified versions.
    pub user_versions: &'static [i64],
    /// Tables whose column names a sandbox/machine id: a row there naming an id the main
    /// table lacks means the main table lost rows.
    pub references: &'static [(&'static str, &'static str)],
}

/// `celesto.db` (and a legacy `smolvm.db`) of Celesto 0.1.10 / PyPI smolvm 0.0.36.
pub(crate) const CELESTO_DB: Schema = Schema {
    product: Product::Celesto,
    tables: &[
        "vms",
        "ip_leases",
        "ssh_forwards",
        "vsock_cids",
        "tap_allocations",
        "browser_sessions",
        "snapshots",
    ],
    user_versions: &[0],
    references: &[
        ("ip_leases", "vm_id"),
        ("ssh_forwards", "vm_id"),
        ("vsock_cids", "vm_id"),
        ("tap_allocations", "vm_id"),
    ],
};

/// `smolvm.db` of smol-machines smolvm up to 1.32.2.
pub(crate) const SMOLVM_DB: Schema = Schema {
    product: Product::Smolvm,
    tables: &[
        "vms",
        "vm_create_reservations",
        "vm_pause_operations",
        "config",
        "vm_resize_intents",
        "vm_resize_receipts",
        "fork_pools",
        "fork_pool_snapshots",
        "fork_pool_slots",
        "fork_leases",
    ],
    user_versions: &[0],
    references: &[("fork_pool_slots", "machine_name")],
};

/// An SQLite inventory a product writes: which product and distribution write it, where it
/// lives, what its file is called, and the schema its rows are trusted by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inventory {
    pub product: Product,
    /// The distribution that writes it, as [`VERIFIED`] names it (its versions are there).
    /// Table data: the tests hold it against [`VERIFIED`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub writer: &'static str,
    /// Its directory inside the product's state directory: `server` inside smolvm's data root;
    /// empty for Celesto's data directory itself.
    pub dir: &'static str,
    /// Its file name.
    pub name: &'static str,
    /// The schema its rows are trusted by (the tests hold it against the product).
    #[cfg_attr(not(test), allow(dead_code))]
    pub schema: &'static Schema,
}

impl Inventory {
    /// Where it is inside the state directory `root`.
    pub(crate) fn path_in(&self, root: &Path) -> PathBuf {
        root.join(self.dir).join(self.name)
    }
}

/// Celesto's own inventory.
pub(crate) const CELESTO_INVENTORY: Inventory = Inventory {
    product: Product::Celesto,
    writer: "celesto",
    dir: "",
    name: "celesto.db",
    schema: &CELESTO_DB,
};

/// The inventory of PyPI `smolvm`, Celesto's predecessor: read with Celesto's rules.
pub(crate) const PYPI_SMOLVM_INVENTORY: Inventory = Inventory {
    product: Product::Celesto,
    writer: "smolvm (PyPI)",
    dir: "",
    name: "smolvm.db",
    schema: &CELESTO_DB,
};

/// smol-machines smolvm's machine database.
pub(crate) const SMOLVM_INVENTORY: Inventory = Inventory {
    product: Product::Smolvm,
    writer: "smolvm",
    dir: "server",
    name: "smolvm.db",
    schema: &SMOLVM_DB,
};

/// Every inventory either product writes; a product's newest first.
pub(crate) const INVENTORIES: &[Inventory] =
    &[CELESTO_INVENTORY, PYPI_SMOLVM_INVENTORY, SMOLVM_INVENTORY];

crate::table::closed_table! {
    /// A file SQLite writes beside a database, named `<database>-<value>`; the row says whether
    /// it changes only when the database's content does (a reader writes `-shm` too).
    pub(crate) enum SideFile ("SQLite side file") -> (bool,) {
        Wal => "wal", (true,);
        Shm => "shm", (false,);
        Journal => "journal", (true,);
    }
}

impl SideFile {
    /// Whether it changes only when the database's content does.
    fn follows_content(self) -> bool {
        self.row().0
    }

    /// Its path beside `db`.
    pub(crate) fn beside(self, db: &Path) -> PathBuf {
        let mut s = db.as_os_str().to_owned();
        s.push("-");
        s.push(self.as_str());
        PathBuf::from(s)
    }
}

/// The database at `db` and every side file SQLite may write beside it: what is checked for a
/// file that is not a regular file.
pub(crate) fn db_files(db: &Path) -> Vec<PathBuf> {
    std::iter::once(db.to_path_buf())
        .chain(SideFile::ALL.iter().map(|s| s.beside(db)))
        .collect()
}

/// The database at `db` and the side files that change with its content: what a reading is
/// stamped with, and what a watcher's write means a rescan for.
pub(crate) fn content_files(db: &Path) -> Vec<PathBuf> {
    std::iter::once(db.to_path_buf())
        .chain(
            SideFile::ALL
                .iter()
                .filter(|s| s.follows_content())
                .map(|s| s.beside(db)),
        )
        .collect()
}

/// Whether a file named `name` is an inventory database (`*.db`, `*.sqlite`) or a side file
/// that changes with its content: a write to it can change what a scan finds.
pub fn is_inventory_content(name: &str) -> bool {
    let db = |n: &str| n.ends_with(".db") || n.ends_with(".sqlite");
    db(name)
        || SideFile::ALL
            .iter()
            .filter(|s| s.follows_content())
            .any(|s| {
                name.strip_suffix(s.as_str())
                    .and_then(|n| n.strip_suffix('-'))
                    .is_some_and(db)
            })
}

/// The inventories of `product`, in the order of [`INVENTORIES`].
pub(crate) fn inventories(product: Product) -> impl Iterator<Item = &'static Inventory> {
    INVENTORIES.iter().filter(move |i| i.product == product)
}

/// Where `product`'s inventories are inside its state directory `root`.
pub(crate) fn inventory_paths(product: Product, root: &Path) -> Vec<PathBuf> {
    inventories(product).map(|i| i.path_in(root)).collect()
}

/// Whether `name`, directly in the directory of one of `product`'s inventories, is that
/// inventory or a side file SQLite writes beside it (`celesto.db-wal`).
pub(crate) fn is_inventory_file(product: Product, name: &str) -> bool {
    inventories(product).any(|i| {
        name.strip_prefix(i.name).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix('-')
                    .is_some_and(|s| SideFile::parse(s).is_some())
        })
    })
}

/// Whether `installed` is newer than every version of `product` the rules were verified
/// against; `Some(newest known)` when it is.
pub(crate) fn drift(product: Product, installed: &str) -> Option<&'static str> {
    let newest = VERIFIED
        .iter()
        .filter(|(p, _, _)| *p == product)
        .map(|(_, _, v)| *v)
        .max_by(|a, b| compare(a, b))?;
    (compare(installed, newest) == std::cmp::Ordering::Greater).then_some(newest)
}

/// [`drift`] for one install: a PyPI `smolvm` distribution (Celesto's predecessor) is compared
/// with the newest PyPI `smolvm` verified, every other install with its product's newest.
pub(crate) fn drift_of(
    product: Product,
    distribution: Option<&str>,
    installed: &str,
) -> Option<&'static str> {
    if product == Product::Celesto && distribution == Some("smolvm") {
        let newest = VERIFIED
            .iter()
            .find(|(p, d, _)| *p == product && d.starts_with("smolvm"))
            .map(|(_, _, v)| *v)?;
        return (compare(installed, newest) == std::cmp::Ordering::Greater).then_some(newest);
    }
    drift(product, installed)
}

/// Compare dotted versions numerically (`1.32.10` > `1.32.2`); a non-numeric part compares as
/// text after the numeric ones.
pub(crate) fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<(u64, String)> {
        s.trim_start_matches('v')
            .split(['.', '-', '+'])
            .map(|p| {
                let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
                (digits.parse().unwrap_or(0), p[digits.len()..].to_string())
            })
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// Whether a Celesto version calls its sandboxes "computers" (0.1.10 and later; `sandbox` stays
/// an alias on the command line).
pub(crate) fn celesto_uses_computer_noun(version: &str) -> bool {
    compare(version, "0.1.10").is_ge()
}

/// Split upstream bug references out of a sentence: `"… upstream never finds these (B10)."`
/// becomes `"… upstream never finds these."` with refs `["B10"]`. The sentence is for people;
/// the references go to the JSON's `refs` and the docs.
pub(crate) fn split_refs(text: &str) -> (String, Vec<String>) {
    let mut refs = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')').map(|c| open + c) else {
            break;
        };
        let inner = &rest[open + 1..close];
        let (kept, found) = strip_ref_tokens(inner);
        out.push_str(&rest[..open]);
        if found.is_empty() {
            out.push_str(&rest[open..=close]);
        } else {
            refs.extend(found);
            if kept.is_empty() {
                while out.ends_with(' ') {
                    out.pop();
                }
            } else {
                out.push('(');
                out.push_str(&kept);
                out.push(')');
            }
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    (out, refs)
}

/// Remove `B<n>` tokens (with a leading "upstream"/"Celesto"/"smolvm" and a ":" before them).
fn strip_ref_tokens(inner: &str) -> (String, Vec<String>) {
    let is_ref =
        |w: &str| w.len() >= 2 && w.starts_with('B') && w[1..].chars().all(|c| c.is_ascii_digit());
    let words: Vec<&str> = inner.split_whitespace().collect();
    let refs: Vec<String> = words
        .iter()
        .map(|w| w.trim_matches(|c: char| c == ',' || c == ';'))
        .filter(|w| is_ref(w))
        .map(str::to_string)
        .collect();
    if refs.is_empty() {
        return (inner.to_string(), refs);
    }
    let mut kept: Vec<&str> = words
        .into_iter()
        .filter(|w| !is_ref(w.trim_matches(|c: char| c == ',' || c == ';')))
        .collect();
    if kept.len() == 1 && matches!(kept[0], "upstream" | "Celesto" | "smolvm") {
        kept.clear();
    }
    let mut s = kept.join(" ");
    while s.ends_with(':') || s.ends_with(',') {
        s.pop();
    }
    (s, refs)
}

/// The pid in a helper machine's name (`image-seed-<hash>-<pid>`, `init-bake-<hash>-<pid>`):
/// the process whose image build or init bake made it.
pub(crate) fn helper_creator(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("image-seed-")
        .or_else(|| name.strip_prefix("init-bake-"))?;
    let (_, pid) = rest.rsplit_once('-')?;
    pid.parse().ok().filter(|p| *p > 0)
}

/// Whether `name` is a smolvm helper machine (`image-seed-<hash>-<pid>`, `init-bake-…-<pid>`).
pub(crate) fn is_helper_machine(name: &str) -> bool {
    helper_creator(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically_and_drift_is_newer_than_verified() {
        assert!(compare("1.32.10", "1.32.2").is_gt());
        assert!(compare("0.1.10", "0.1.9").is_gt());
        assert!(compare("0.2.0", "0.1.10").is_gt());
        assert_eq!(drift(Product::Celesto, "0.1.10"), None);
        assert_eq!(drift(Product::Celesto, "0.0.36"), None);
        assert_eq!(drift(Product::Celesto, "0.2.1"), Some("0.1.10"));
        assert_eq!(drift(Product::Smolvm, "1.33.0"), Some("1.32.2"));
        assert_eq!(drift(Product::Smolvm, "1.18.2"), None);
    }

    #[test]
    fn every_inventory_has_a_verified_writer_and_a_place() {
        for i in INVENTORIES {
            assert!(VERIFIED
                .iter()
                .any(|(p, d, _)| *p == i.product && *d == i.writer));
            assert_eq!(i.schema.product, i.product);
        }
        let root = Path::new("/d");
        assert_eq!(
            inventory_paths(Product::Celesto, root),
            [root.join("celesto.db"), root.join("smolvm.db")]
        );
        assert_eq!(
            SMOLVM_INVENTORY.path_in(root),
            Path::new("/d/server/smolvm.db")
        );
        assert!(is_inventory_file(Product::Celesto, "smolvm.db-journal"));
        assert!(!is_inventory_file(Product::Celesto, "smolvm.dbx"));
        assert!(!is_inventory_file(Product::Celesto, "notes.db"));
    }

    #[test]
    fn bug_numbers_leave_the_sentence_for_refs() {
        let cases = [
            (
                "Companion file of disk 'x', which is gone; upstream never finds these (B10).",
                "Companion file of disk 'x', which is gone; upstream never finds these.",
                vec!["B10"],
            ),
            (
                "whose disk process 1 is using (upstream would delete it: B3).",
                "whose disk process 1 is using (upstream would delete it).",
                vec!["B3"],
            ),
            (
                "deleting it would break them (upstream B1).",
                "deleting it would break them.",
                vec!["B1"],
            ),
            (
                "Named like a log (upstream deletes these: B18); left alone.",
                "Named like a log (upstream deletes these); left alone.",
                vec!["B18"],
            ),
            (
                "Plain (no refs here) sentence.",
                "Plain (no refs here) sentence.",
                vec![],
            ),
            ("Unbalanced ( B3", "Unbalanced ( B3", vec![]),
        ];
        for (text, want, refs) in cases {
            let (got, r) = split_refs(text);
            assert_eq!(got, want);
            assert_eq!(r, refs);
        }
    }
}
