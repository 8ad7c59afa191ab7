//! What each kind of state directory is, for the uninstall: what it is called, why an uninstall
//! removes it, and whether its entries are checked one by one against what its product writes.
//! What a product writes is the one layout table (`crate::layout`), which the scan's dispatch
//! and the verifier read too: a name the scan knows is a name the uninstall knows.
//!
//! An uninstall removes the recognised entries of a directory; anything else in it is listed as
//! not the product's and kept unless the user ticks it. A new upstream release that writes a new
//! entry is a row of `crate::layout` plus a fixture.

use crate::layout::{self, Place};

/// A state directory's kind (`StateDir::kind`) is the scan's root kind (`crate::root_kind`,
/// serialised as its name, `data_root`); what the uninstall says and checks of each is here.
pub use crate::root_kind::RootKind as StateKind;

/// What the uninstall says of a kind of state directory: what it is called, why an uninstall
/// removes it, and whether its entries are checked one by one against the layout table (a
/// directory removed whole, like Celesto's home, is not). `None` for a kind that is no state
/// directory of its own.
fn uninstall_row(k: StateKind) -> Option<(&'static str, &'static str, bool)> {
    match k {
        StateKind::DataRoot => Some((
            "smolvm data",
            "The machine database, agent rootfs and usage files.",
            true,
        )),
        StateKind::CacheRoot => Some((
            "smolvm machines and caches",
            "Every machine's disks (vms/), pack stores and restore caches (which hold guest RAM).",
            true,
        )),
        StateKind::PackCache => Some(("smolvm pack cache", "Extracted .smolmachine packs.", true)),
        StateKind::LibsCache => Some((
            "smolvm unpacked libraries",
            "Libraries unpacked by packed binaries.",
            true,
        )),
        StateKind::RegistryCache => Some((
            "smolvm registry blob cache",
            "Left behind by upstream's own uninstaller.",
            true,
        )),
        StateKind::ImageArchives => Some((
            "smolvm image archives",
            "Left behind by upstream's own uninstaller.",
            true,
        )),
        StateKind::ConfigDir => Some((
            "smolvm settings and registry credentials",
            "Asked for with --remove-credentials.",
            true,
        )),
        StateKind::DataDir => Some((
            "Celesto data",
            "Sandbox inventory, disks, logs, snapshots and locks.",
            true,
        )),
        StateKind::ImageDir => Some((
            "Celesto image cache",
            "Downloaded and built images and kernels (rebuildable).",
            true,
        )),
        StateKind::CelestoHome => Some((
            "Celesto home: settings, SSH keys and host keys",
            "State of the product being uninstalled.",
            false,
        )),
        StateKind::VmsDir | StateKind::SocketDir => None,
    }
}

impl StateKind {
    /// What a directory of this kind is, in words ("smolvm machines and caches").
    pub fn label(self) -> &'static str {
        uninstall_row(self).map_or(self.what(), |r| r.0)
    }
    /// What a directory of this kind holds (the why of the step that removes it).
    pub fn why(self) -> &'static str {
        uninstall_row(self).map_or("", |r| r.1)
    }
    /// Whether entries of this kind of directory are checked one by one.
    pub fn has_layout(self) -> bool {
        uninstall_row(self).is_some_and(|r| r.2)
    }
    /// Whether `name`, directly inside a directory of this kind, is something its product
    /// writes (a row of the layout table). A kind whose entries are not checked recognises
    /// nothing.
    pub fn recognises(self, name: &str) -> bool {
        self.has_layout() && layout::row(Place::Root(self), name).is_some()
    }
    /// Whether a directory of this kind with these entry names shows its product's layout. A
    /// Celesto data directory must hold an inventory or `disks/` (a `CELESTO_DATA_DIR` pointed
    /// at a project is not Celesto's because it holds a `locks/` or a `build.log`).
    pub fn proves_layout(self, names: &[&str]) -> bool {
        match self {
            StateKind::DataDir => names
                .iter()
                .any(|n| crate::roots::celesto_data_markers().any(|m| m == *n)),
            _ => names.iter().any(|n| self.recognises(n)),
        }
    }
    /// Whether `name` in a directory of this kind holds credentials (kept unless the user asks):
    /// registry tokens beside the caches, a fleet node's credentials beside the data. The
    /// settings directory itself is asked for with --remove-credentials as a whole.
    pub fn credential(self, name: &str) -> bool {
        self != StateKind::ConfigDir
            && layout::row(Place::Root(self), name).is_some_and(layout::Row::credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Product;

    fn recognised(product: Product, kind: &str, name: &str) -> bool {
        StateKind::parse(kind).is_some_and(|k| k.product() == product && k.recognises(name))
    }

    fn proves_layout(product: Product, kind: &str, names: &[&str]) -> bool {
        StateKind::parse(kind).is_some_and(|k| k.product() == product && k.proves_layout(names))
    }

    #[test]
    fn tables_recognise_what_the_products_write_and_nothing_else() {
        let s = Product::Smolvm;
        let c = Product::Celesto;
        assert!(recognised(s, "cache_root", "vms"));
        assert!(recognised(s, "cache_root", "registry-tokens"));
        assert!(!recognised(s, "cache_root", "my-notes.txt"));
        assert!(recognised(s, "pack_cache", "1a2b3c4d"));
        assert!(recognised(s, "pack_cache", "1a2b3c4d.lock"));
        assert!(!recognised(s, "pack_cache", "photos"));
        assert!(recognised(c, "data_dir", "celesto.db-wal"));
        assert!(recognised(c, "data_dir", "live-4375.log"));
        assert!(recognised(c, "data_dir", "disks"));
        assert!(!recognised(c, "data_dir", "src"));
        assert!(!recognised(c, "data_dir", "Cargo.toml"));
        assert!(!recognised(c, "nonesuch", "disks"));
        assert!(recognised(c, "image_dir", "ubuntu-v0.1.10-amd64-qemu"));
        assert!(!recognised(c, "image_dir", "my-holiday-photos"));
        assert!(proves_layout(c, "data_dir", &["disks", "x.log"]));
        assert!(!proves_layout(
            c,
            "data_dir",
            &["locks", "build.log", "src"]
        ));
    }
}
