//! What each product is known to write directly inside each of its state directories, as data
//! (from `shared/reference`: smol-machines smolvm §2.2 up to 1.32.2, Celesto §2–3 for 0.1.10).
//!
//! An uninstall removes the recognised entries of a directory; anything else in it is listed as
//! not the product's and kept unless the user ticks it. A new upstream release that writes a new
//! entry is a change to these tables plus a fixture.

use crate::model::Product;

/// How the entries of one kind of state directory are recognised.
struct Table {
    product: Product,
    /// `StateDir::kind`.
    kind: &'static str,
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

const TABLES: &[Table] = &[
    Table {
        product: Product::Smolvm,
        kind: "data_root",
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
    },
    Table {
        product: Product::Smolvm,
        kind: "cache_root",
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
    },
    Table {
        product: Product::Smolvm,
        kind: "pack_cache",
        names: &[],
        shape: hex8_maybe_lock,
    },
    Table {
        product: Product::Smolvm,
        kind: "libs_cache",
        names: &[],
        shape: hex8_maybe_lock,
    },
    Table {
        product: Product::Smolvm,
        kind: "registry_cache",
        names: &["blobs", "index", "tmp"],
        shape: none,
    },
    // Archives are named by the user (`--image` files) and live in a directory of smolvm's own.
    Table {
        product: Product::Smolvm,
        kind: "image_archives",
        names: &[],
        shape: any,
    },
    Table {
        product: Product::Smolvm,
        kind: "config_dir",
        names: &["config.toml", "registries.toml"],
        shape: none,
    },
    Table {
        product: Product::Celesto,
        kind: "data_dir",
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
    },
    Table {
        product: Product::Celesto,
        kind: "image_dir",
        names: &["macos", ".downloads"],
        shape: celesto_image_shape,
    },
];

/// Whether `name`, directly inside a `kind` state directory of `product`, is something that
/// product writes. Unknown kinds recognise nothing.
pub fn recognised(product: Product, kind: &str, name: &str) -> bool {
    TABLES
        .iter()
        .find(|t| t.product == product && t.kind == kind)
        .is_some_and(|t| t.names.contains(&name) || (t.shape)(name))
}

/// Whether a directory of this kind with these entry names shows its product's layout. A
/// Celesto data directory must hold an inventory or `disks/` (a `CELESTO_DATA_DIR` pointed at
/// a project is not Celesto's because it holds a `locks/` or a `build.log`).
pub fn proves_layout(product: Product, kind: &str, names: &[&str]) -> bool {
    match (product, kind) {
        (Product::Celesto, "data_dir") => names
            .iter()
            .any(|n| crate::roots::celesto_data_markers().any(|m| m == *n)),
        _ => names.iter().any(|n| recognised(product, kind, n)),
    }
}

/// Whether `name` in a `kind` directory holds credentials (kept unless the user asks).
pub fn credential(product: Product, kind: &str, name: &str) -> bool {
    matches!(
        (product, kind, name),
        (Product::Smolvm, "cache_root", "registry-tokens")
    )
}

/// Whether entries of this kind of directory are checked one by one.
pub fn has_table(product: Product, kind: &str) -> bool {
    TABLES
        .iter()
        .any(|t| t.product == product && t.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

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
