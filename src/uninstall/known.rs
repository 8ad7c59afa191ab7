//! What each kind of state directory is and what its product is known to write directly inside
//! it, as one table of data (from `shared/reference`: smol-machines smolvm §2.2 up to 1.32.2,
//! Celesto §2–3 for 0.1.10): a [`StateKind`] per kind, with its product, what it is called,
//! why an uninstall removes it and how its entries are recognised.
//!
//! An uninstall removes the recognised entries of a directory; anything else in it is listed as
//! not the product's and kept unless the user ticks it. A new upstream release that writes a new
//! entry is a change to these tables plus a fixture.

use crate::model::Product;

/// How the entries directly inside a kind of state directory are recognised.
#[derive(Clone, Copy)]
struct Layout {
    /// Exact names.
    names: &'static [&'static str],
    /// Other shapes of name (hex-named pack dirs, logs).
    shape: fn(&str) -> bool,
}

fn none(_: &str) -> bool {
    false
}

fn any(_: &str) -> bool {
    true
}

/// `<8 hex>` or `<8 hex>.lock` (pack and library caches).
fn hex8_maybe_lock(n: &str) -> bool {
    let stem = n.strip_suffix(".lock").unwrap_or(n);
    stem.len() == 8 && stem.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A sandbox's log (`<id>.log`), an inventory or an SQLite side file of one.
fn celesto_data_shape(n: &str) -> bool {
    n.ends_with(".log") || crate::upstream::is_inventory_file(Product::Celesto, n)
}

/// A published image cache entry (`<preset>-v<version>-<arch>-<vmm>`), a staging dir, a lock.
fn celesto_image_shape(n: &str) -> bool {
    let parts: Vec<&str> = n.split('-').collect();
    let published = parts.len() >= 4
        && parts.iter().any(|p| {
            p.strip_prefix('v')
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        });
    published || n.starts_with(".build-") || n.ends_with(".lock")
}

const SMOLVM_DATA_ROOT: Layout = Layout {
    names: &[
        "agent-rootfs",
        "server",
        "init.krun",
        "volumes",
        "node-credentials",
        "usage",
        ".agent-rootfs.lock",
        "vms",
    ],
    shape: none,
};

const SMOLVM_CACHE_ROOT: Layout = Layout {
    names: &[
        "vms",
        "init-layers",
        "image-seeds",
        "registry-tokens",
        "agent-rootfs-tars",
        "rootfs",
        "net",
        "uids",
        "storage-template.ext4",
        "overlay-template.ext4",
    ],
    shape: none,
};

/// Pack and library caches: `<8 hex>` entries and their locks.
const HEX_CACHE: Layout = Layout {
    names: &[],
    shape: hex8_maybe_lock,
};

const SMOLVM_REGISTRY_CACHE: Layout = Layout {
    names: &["blobs", "index", "tmp"],
    shape: none,
};

/// Archives are named by the user (`--image` files) and live in a directory of smolvm's own.
const SMOLVM_IMAGE_ARCHIVES: Layout = Layout {
    names: &[],
    shape: any,
};

const SMOLVM_CONFIG_DIR: Layout = Layout {
    names: &["config.toml", "registries.toml"],
    shape: none,
};

/// The inventories (`upstream::INVENTORIES`) and logs are recognised by `celesto_data_shape`.
const CELESTO_DATA_DIR: Layout = Layout {
    names: &[
        "disks",
        "snapshots",
        "firmware",
        "locks",
        "ssh-known-hosts",
        "browser-sessions",
        "macos-vms",
        "dashboard-ui",
    ],
    shape: celesto_data_shape,
};

const CELESTO_IMAGE_DIR: Layout = Layout {
    names: &["macos", ".downloads"],
    shape: celesto_image_shape,
};

/// A state directory's kind (`StateDir::kind`) is the scan's root kind (`crate::root_kind`,
/// serialised as its name, `data_root`); what the uninstall says and checks of each is here.
pub use crate::root_kind::RootKind as StateKind;

/// What the uninstall says of a kind of state directory and how it checks its entries: what it
/// is called, why an uninstall removes it, and the layout its entries are checked against one by
/// one (none: not checked entry by entry). `None` for a kind that is no state directory of its
/// own.
fn uninstall_row(k: StateKind) -> Option<(&'static str, &'static str, Option<Layout>)> {
    match k {
        StateKind::DataRoot => Some((
            "smolvm data",
            "The machine database, agent rootfs and usage files.",
            Some(SMOLVM_DATA_ROOT),
        )),
        StateKind::CacheRoot => Some((
            "smolvm machines and caches",
            "Every machine's disks (vms/), pack stores and restore caches (which hold guest RAM).",
            Some(SMOLVM_CACHE_ROOT),
        )),
        StateKind::PackCache => Some((
            "smolvm pack cache",
            "Extracted .smolmachine packs.",
            Some(HEX_CACHE),
        )),
        StateKind::LibsCache => Some((
            "smolvm unpacked libraries",
            "Libraries unpacked by packed binaries.",
            Some(HEX_CACHE),
        )),
        StateKind::RegistryCache => Some((
            "smolvm registry blob cache",
            "Left behind by upstream's own uninstaller.",
            Some(SMOLVM_REGISTRY_CACHE),
        )),
        StateKind::ImageArchives => Some((
            "smolvm image archives",
            "Left behind by upstream's own uninstaller.",
            Some(SMOLVM_IMAGE_ARCHIVES),
        )),
        StateKind::ConfigDir => Some((
            "smolvm settings and registry credentials",
            "Asked for with --remove-credentials.",
            Some(SMOLVM_CONFIG_DIR),
        )),
        StateKind::DataDir => Some((
            "Celesto data",
            "Sandbox inventory, disks, logs, snapshots and locks.",
            Some(CELESTO_DATA_DIR),
        )),
        StateKind::ImageDir => Some((
            "Celesto image cache",
            "Downloaded images and kernels (rebuildable).",
            Some(CELESTO_IMAGE_DIR),
        )),
        StateKind::CelestoHome => Some((
            "Celesto home: settings, SSH keys and host keys",
            "State of the product being uninstalled.",
            None,
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
        uninstall_row(self).is_some_and(|r| r.2.is_some())
    }
    /// Whether `name`, directly inside a directory of this kind, is something its product
    /// writes. A kind with no layout recognises nothing.
    pub fn recognises(self, name: &str) -> bool {
        uninstall_row(self)
            .and_then(|r| r.2)
            .is_some_and(|l| l.names.contains(&name) || (l.shape)(name))
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
    /// Whether `name` in a directory of this kind holds credentials (kept unless the user asks).
    pub fn credential(self, name: &str) -> bool {
        self == StateKind::CacheRoot && name == "registry-tokens"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
