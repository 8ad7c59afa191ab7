//! The kinds of directory where a product keeps state: one closed table for the scan's report
//! (its roots, named `data_dir`, `data_dir_2`, ...), `why` (a root in words) and the uninstall
//! (its state directories, `uninstall::known` adds what it removes and checks of each).

use crate::product::Product;
use crate::table::closed_table;

closed_table! {
    /// A kind of state directory: its product, what it is in words, and whether the uninstall
    /// removes it as a state directory of its own.
    pub enum RootKind ("root kind") -> (Product, &'static str, bool) {
        /// smolvm's data root (`~/.local/share/smolvm`): the machine DB, agent rootfs, usage files.
        DataRoot => "data_root", (Product::Smolvm, "data directory", true);
        /// smolvm's cache root: every machine's disks (`vms/`), pack stores, restore caches.
        CacheRoot => "cache_root", (Product::Smolvm, "cache directory", true);
        /// Extracted `.smolmachine` packs.
        PackCache => "pack_cache", (Product::Smolvm, "pack cache", true);
        /// Libraries unpacked by packed binaries.
        LibsCache => "libs_cache", (Product::Smolvm, "library cache", true);
        /// smolvm's registry blob cache.
        RegistryCache => "registry_cache", (Product::Smolvm, "registry cache", true);
        /// smolvm's image archives.
        ImageArchives => "image_archives", (Product::Smolvm, "image archives", true);
        /// smolvm's settings and registry credentials (`~/.config/smolvm`).
        ConfigDir => "config_dir", (Product::Smolvm, "configuration directory", true);
        /// smolvm's machine directories (`vms/` of the cache root, or where the record says).
        VmsDir => "vms_dir", (Product::Smolvm, "machine directories", false);
        /// Celesto's data directory: the sandbox inventory, disks, logs, snapshots, locks.
        DataDir => "data_dir", (Product::Celesto, "data directory", true);
        /// Celesto's image cache: downloaded images and kernels.
        ImageDir => "image_dir", (Product::Celesto, "image cache", true);
        /// Celesto's home (`~/.celesto`): settings, SSH keys, host keys.
        CelestoHome => "celesto_home", (Product::Celesto, "home directory", true);
        /// Celesto's socket directory (shared by every user; only this HOME's files are its).
        SocketDir => "socket_dir", (Product::Celesto, "socket directory", false);
    }
}

impl RootKind {
    /// The product that keeps this kind of directory.
    pub const fn product(self) -> Product {
        self.row().0
    }

    /// What it is, in words ("image cache").
    pub const fn what(self) -> &'static str {
        self.row().1
    }

    /// Whether the uninstall removes a directory of this kind as a state directory of its own.
    pub const fn is_state_dir(self) -> bool {
        self.row().2
    }

    /// The report's name of the `n`th (from 0) root of this kind: `data_dir`, `data_dir_2`, ...
    pub fn key(self, n: usize) -> String {
        match n {
            0 => self.as_str().to_string(),
            n => format!("{}_{}", self.as_str(), n + 1),
        }
    }

    /// The kind a report's root name names (`image_dir_2`, `vms_dir_2_3`), if any.
    pub fn of_key(key: &str) -> Option<RootKind> {
        let mut k = key;
        while let Some((head, tail)) = k.rsplit_once('_') {
            if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
                break;
            }
            k = head;
        }
        RootKind::parse(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_name_with_its_counters_names_its_kind() {
        assert_eq!(RootKind::of_key("image_dir_2"), Some(RootKind::ImageDir));
        assert_eq!(RootKind::of_key("vms_dir_2_3"), Some(RootKind::VmsDir));
        assert_eq!(RootKind::of_key("data_root"), Some(RootKind::DataRoot));
        assert_eq!(RootKind::of_key("elsewhere"), None);
        for k in RootKind::ALL {
            for n in 0..3 {
                assert_eq!(RootKind::of_key(&k.key(n)), Some(*k));
            }
        }
    }
}
