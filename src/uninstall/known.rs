//! What each kind of state directory is and what its product is known to write directly inside
//! it, as one table of data (from `shared/reference`: smol-machines smolvm §2.2 up to 1.32.2,
//! Celesto §2–3 for 0.1.10): a [`StateKind`] per kind, with its product, what it is called,
//! why an uninstall removes it and how its entries are recognised.
//!
//! An uninstall removes the recognised entries of a directory; anything else in it is listed as
//! not the product's and kept unless the user ticks it. A new upstream release that writes a new
//! entry is a change to these tables plus a fixture.

use crate::model::Product;
use crate::table::closed_table;

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

closed_table! {
    /// What a state directory is (`StateDir::kind`), serialised as its name (`data_root`): its
    /// product, what it is called, why an uninstall removes it, and the layout its entries are
    /// checked against one by one (none: the directory is not checked entry by entry).
    pub enum StateKind ("state directory kind") -> (Product, &'static str, &'static str, Option<Layout>) {
        /// smolvm's data root (`~/.local/share/smolvm`): the machine DB, agent rootfs, usage files.
        DataRoot => "data_root", (
            Product::Smolvm,
            "smolvm data",
            "The machine database, agent rootfs and usage files.",
            Some(SMOLVM_DATA_ROOT),
        );
        /// smolvm's cache root: every machine's disks (`vms/`), pack stores, restore caches.
        CacheRoot => "cache_root", (
            Product::Smolvm,
            "smolvm machines and caches",
            "Every machine's disks (vms/), pack stores and restore caches (which hold guest RAM).",
            Some(SMOLVM_CACHE_ROOT),
        );
        /// Extracted `.smolmachine` packs.
        PackCache => "pack_cache", (
            Product::Smolvm,
            "smolvm pack cache",
            "Extracted .smolmachine packs.",
            Some(HEX_CACHE),
        );
        /// Libraries unpacked by packed binaries.
        LibsCache => "libs_cache", (
            Product::Smolvm,
            "smolvm unpacked libraries",
            "Libraries unpacked by packed binaries.",
            Some(HEX_CACHE),
        );
        /// smolvm's registry blob cache (upstream's uninstaller leaves it).
        RegistryCache => "registry_cache", (
            Product::Smolvm,
            "smolvm registry blob cache",
            "Left behind by upstream's own uninstaller.",
            Some(SMOLVM_REGISTRY_CACHE),
        );
        /// smolvm's image archives (upstream's uninstaller leaves them).
        ImageArchives => "image_archives", (
            Product::Smolvm,
            "smolvm image archives",
            "Left behind by upstream's own uninstaller.",
            Some(SMOLVM_IMAGE_ARCHIVES),
        );
        /// smolvm's settings and registry credentials (`~/.config/smolvm`).
        ConfigDir => "config_dir", (
            Product::Smolvm,
            "smolvm settings and registry credentials",
            "Asked for with --remove-credentials.",
            Some(SMOLVM_CONFIG_DIR),
        );
        /// Celesto's data directory: the sandbox inventory, disks, logs, snapshots, locks.
        DataDir => "data_dir", (
            Product::Celesto,
            "Celesto data",
            "Sandbox inventory, disks, logs, snapshots and locks.",
            Some(CELESTO_DATA_DIR),
        );
        /// Celesto's image cache: downloaded images and kernels.
        ImageDir => "image_dir", (
            Product::Celesto,
            "Celesto image cache",
            "Downloaded images and kernels (rebuildable).",
            Some(CELESTO_IMAGE_DIR),
        );
        /// Celesto's home (`~/.celesto`): settings, SSH keys, host keys.
        CelestoHome => "celesto_home", (
            Product::Celesto,
            "Celesto home: settings, SSH keys and host keys",
            "State of the product being uninstalled.",
            None,
        );
    }
}

impl StateKind {
    /// The product whose state directory this is.
    pub const fn product(self) -> Product {
        self.row().0
    }
    /// What a directory of this kind is, in words ("smolvm machines and caches").
    pub const fn label(self) -> &'static str {
        self.row().1
    }
    /// What a directory of this kind holds (the why of the step that removes it).
    pub const fn why(self) -> &'static str {
        self.row().2
    }
    /// Whether entries of this kind of directory are checked one by one.
    pub const fn has_layout(self) -> bool {
        self.row().3.is_some()
    }
    /// Whether `name`, directly inside a directory of this kind, is something its product
    /// writes. A kind with no layout recognises nothing.
    pub fn recognises(self, name: &str) -> bool {
        self.row()
            .3
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
