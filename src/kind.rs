//! The closed vocabulary of what a finding is: one [`FindingKind`] per class of path either
//! product leaves, each with its `smolsweep.scan/1` string, the label and one-line meaning every
//! surface shows, its risk class and how it is removed. A new kind is one line of the table.
//! Likewise what a VM process is: one [`ProcShape`] per shape of VMM process either product
//! starts, with its stable name, product and label.

use serde::{Deserialize, Serialize};

use crate::product::Product;

/// What removing a finding of a kind costs its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// It belongs to nothing that exists: nothing is lost.
    Leftover,
    /// Rebuilt or downloaded again when it is needed.
    Rebuild,
    /// May hold data someone wants back (saved disks, snapshots, firmware variables).
    UserData,
    /// Credentials: never part of a reclaim.
    Credential,
    /// Belongs to something that exists or is in use: never removed.
    Live,
    /// Could not be verified: never removed.
    Unverified,
}

impl Risk {
    /// One phrase for every surface.
    pub fn label(self) -> &'static str {
        match self {
            Risk::Leftover => "nothing is lost",
            Risk::Rebuild => "rebuilt when needed",
            Risk::UserData => "may hold data you want",
            Risk::Credential => "credentials",
            Risk::Live => "in use",
            Risk::Unverified => "could not be verified",
        }
    }
}

/// How a finding of a kind is removed when a plan includes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Removal {
    /// Deleted (by descriptor; a directory with everything in it).
    Delete,
    /// Only the link is removed; its target is never touched.
    Unlink,
    /// Deleted through the product's own CLI (`smolvm machine delete`), which owns its record.
    ProductCli,
    /// Never removed by Smolsweep.
    Never,
}

/// What part a finding plays in its item (a sandbox's or machine's storage: see `crate::items`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    /// What the item is: a disk, a machine directory.
    Principal,
    /// A file beside a disk (snapshot, backup, resize, backing); a `.retained` marker among them
    /// is what makes its disk a saved one.
    Companion,
    /// The console log of the item's sandbox.
    Log,
    /// Kept while the item's disk is saved (firmware variables, pinned host keys): a member only
    /// of an item whose disk is saved.
    WhileSaved,
    /// A lock file of the item's sandbox: kept and selected with it, judged on its own.
    Lock,
    /// An item of its own.
    Alone,
}

/// The table below in its short form: bare product, risk and removal names. Each value's doc
/// comment is made from its row: label, stable string and meaning.
macro_rules! kinds {
    ($($v:ident => $s:literal, $p:ident, $label:literal, $meaning:literal, $risk:ident, $rm:ident;)*) => {
        crate::table::closed_table! {
            /// What a finding is. Serialised as its `smolsweep.scan/1` string (`celesto.orphan_disk`).
            pub enum FindingKind ("finding kind") -> (Product, &'static str, &'static str, Risk, Removal) {
                $(
                    #[doc = concat!($label, " (`", $s, "`): ", $meaning)]
                    $v => $s, (Product::$p, $label, $meaning, Risk::$risk, Removal::$rm);
                )*
            }
        }
    };
}

kinds! {
    CelestoOrphanDisk => "celesto.orphan_disk", Celesto, "Orphaned disks", "Disks of sandboxes that no longer exist, used by no process.", Leftover, Delete;
    CelestoDiskCompanion => "celesto.disk_companion", Celesto, "Files of orphaned disks", "Snapshot, backup and resize files of orphaned disks; removed with their disk.", Leftover, Delete;
    CelestoOrphanCompanion => "celesto.orphan_companion", Celesto, "Files of disks already gone", "Companion files whose disk was already deleted; Celesto's own prune never finds them.", Leftover, Delete;
    CelestoDiskSymlink => "celesto.disk_symlink", Celesto, "Links named like disks", "Links named like the disk of a sandbox that no longer exists; only the link is removed.", Leftover, Unlink;
    CelestoOrphanLog => "celesto.orphan_log", Celesto, "Logs of deleted sandboxes", "Console logs of sandboxes that no longer exist.", Leftover, Delete;
    CelestoSavedDisk => "celesto.saved_disk", Celesto, "Saved disks", "Disks Celesto saved when their sandbox was deleted (a .retained marker); removed only when you include saved disks.", UserData, Delete;
    CelestoSavedCompanion => "celesto.saved_companion", Celesto, "Files of saved disks", "Companion files of saved disks; they go with the disk.", UserData, Delete;
    CelestoSavedLog => "celesto.saved_log", Celesto, "Logs of saved disks", "Console logs of deleted sandboxes whose disk is saved.", UserData, Delete;
    CelestoSandboxDisk => "celesto.sandbox_disk", Celesto, "Sandbox disks", "Disks of sandboxes that exist.", Live, Never;
    CelestoSandboxDiskCompanion => "celesto.sandbox_disk_companion", Celesto, "Files of sandbox disks", "Companion files of the disks of sandboxes that exist.", Live, Never;
    CelestoSandboxLog => "celesto.sandbox_log", Celesto, "Sandbox logs", "Console logs of sandboxes that exist.", Live, Never;
    CelestoYoungDisk => "celesto.young_disk", Celesto, "Disks being created", "Disks written moments ago, before Celesto listed their sandbox: a create may be under way.", Live, Never;
    CelestoYoungCompanion => "celesto.young_companion", Celesto, "Files of disks being created", "Companion files of disks that may be being created.", Live, Never;
    CelestoYoungLog => "celesto.young_log", Celesto, "Logs of sandboxes being created", "Console logs of sandboxes that may be being created.", Live, Never;
    CelestoInUseDisk => "celesto.in_use_disk", Celesto, "Disks in use", "Disks of no sandbox Celesto lists that a running process is using.", Live, Never;
    CelestoInUseCompanion => "celesto.in_use_companion", Celesto, "Files of disks in use", "Companion files of disks a running process is using.", Live, Never;
    CelestoInUseLog => "celesto.in_use_log", Celesto, "Logs of disks in use", "Console logs of sandboxes whose disk a running process is using.", Live, Never;
    CelestoImageCache => "celesto.image_cache", Celesto, "Image caches", "Downloaded or built guest images; fetched or built again when needed.", Rebuild, Delete;
    CelestoImageCacheStale => "celesto.image_cache_stale", Celesto, "Old image caches", "Guest images of versions Celesto no longer uses; fetched again if ever needed.", Rebuild, Delete;
    CelestoImageCacheCurrent => "celesto.image_cache_current", Celesto, "Current image caches", "The guest images the installed Celesto uses.", Live, Never;
    CelestoImageCacheNewer => "celesto.image_cache_newer", Celesto, "Newer image caches", "Guest images of a Celesto newer than the installed one.", Live, Never;
    CelestoImageCacheInUse => "celesto.image_cache_in_use", Celesto, "Image caches in use", "Guest images a running sandbox boots from.", Live, Never;
    CelestoImageCacheLink => "celesto.image_cache_link", Celesto, "Image cache links", "Links inside the image cache; only the link is removed.", Rebuild, Unlink;
    CelestoRestoreImage => "celesto.restore_image", Celesto, "macOS restore images", "Downloaded macOS restore images (several GB); downloaded again when a macOS guest is made.", Rebuild, Delete;
    CelestoBuildStaging => "celesto.build_staging", Celesto, "Interrupted image builds", "Staging directories left by an image build that was killed.", Leftover, Delete;
    CelestoSnapshot => "celesto.snapshot", Celesto, "Snapshots", "Snapshots of sandboxes; those of deleted sandboxes only when you include residue.", UserData, Delete;
    CelestoFirmwareResidue => "celesto.firmware_residue", Celesto, "Firmware of deleted sandboxes", "Firmware variables and TPM state of deleted sandboxes.", UserData, Delete;
    CelestoMacosVmResidue => "celesto.macos_vm_residue", Celesto, "macOS VM bundles", "macOS VM bundles of deleted sandboxes.", UserData, Delete;
    CelestoBrowserSessionResidue => "celesto.browser_session_residue", Celesto, "Browser sessions", "Browser-session files of deleted sandboxes.", UserData, Delete;
    CelestoLockResidue => "celesto.lock_residue", Celesto, "Lock files", "Lock files no process holds and nothing needs.", Leftover, Delete;
    CelestoKnownHostsResidue => "celesto.known_hosts_residue", Celesto, "SSH host keys", "Pinned SSH host keys of deleted sandboxes.", Leftover, Delete;
    CelestoForwardResidue => "celesto.forward_residue", Celesto, "Port forwards", "Port forwards left by deleted sandboxes.", Leftover, Delete;
    CelestoSocketResidue => "celesto.socket_residue", Celesto, "Sockets", "Sockets of sandboxes that no longer run.", Leftover, Delete;
    CelestoLibkrunConfig => "celesto.libkrun_config", Celesto, "Launcher configs", "libkrun launcher configs of sandboxes that no longer run.", Leftover, Delete;
    CelestoCustomImage => "celesto.custom_image", Celesto, "Custom image builds", "Root file systems built from your Dockerfiles and templates, one per build context; built again when needed (Celesto's own prune never removes them).", Rebuild, Delete;
    CelestoCustomImageTmp => "celesto.custom_image_tmp", Celesto, "Interrupted custom builds", "Half-written root file systems of custom image builds that were killed.", Leftover, Delete;
    CelestoS3Image => "celesto.s3_image", Celesto, "S3 images", "Images downloaded from S3; downloaded again when needed.", Rebuild, Delete;
    CelestoCloudInitSeed => "celesto.cloud_init_seed", Celesto, "Cloud-init seeds", "Cloud-init seed disks no sandbox attaches; made again when needed.", Leftover, Delete;
    CelestoMacosImage => "celesto.macos_image", Celesto, "macOS images", "macOS image bundles Celesto built (tens of GB); built again when needed.", Rebuild, Delete;
    CelestoMacosImageFailed => "celesto.macos_image_failed", Celesto, "Failed macOS image builds", "macOS image bundles without a manifest: builds that did not finish.", Leftover, Delete;
    CelestoOldLume => "celesto.old_lume", Celesto, "Old lume installs", "Versions of the lume tool the installed Celesto no longer uses.", Leftover, Delete;
    CelestoDashboardAssets => "celesto.dashboard_assets", Celesto, "Dashboard assets", "Web assets of the Celesto dashboard; downloaded again when needed.", Rebuild, Delete;
    CelestoMountPoint => "celesto.mount_point", Celesto, "Mount points", "A file system is mounted here; never walked into or deleted through.", Live, Never;
    CelestoOddFile => "celesto.odd_file", Celesto, "Not regular files", "A named pipe, socket or device where Celesto stores a file; never read or deleted.", Unverified, Never;
    CelestoUnrecognised => "celesto.unrecognised", Celesto, "Unrecognised files", "Names Celesto does not write; left alone.", Unverified, Never;
    CelestoUnrecognisedLog => "celesto.unrecognised_log", Celesto, "Unrecognised logs", "Named like logs, but not for a sandbox id Celesto would use; left alone.", Unverified, Never;
    SmolvmDanglingDir => "smolvm.dangling_dir", Smolvm, "Machine directories with no record", "Machine directories of no machine smolvm lists, used by no process (an interrupted run leaves them).", Leftover, Delete;
    SmolvmEmptyDir => "smolvm.empty_dir", Smolvm, "Empty machine directories", "Empty machine directories of no machine smolvm lists.", Leftover, Delete;
    SmolvmNameOnlyDir => "smolvm.name_only_dir", Smolvm, "Machine directories with only a name", "Machine directories holding only their name, of no machine smolvm lists.", Leftover, Delete;
    SmolvmDeadEphemeralDir => "smolvm.dead_ephemeral_dir", Smolvm, "Ended one-off machines", "Ephemeral machines whose VM process is gone; deleted through `smolvm machine delete`.", Leftover, ProductCli;
    SmolvmHelperMachineDir => "smolvm.helper_machine_dir", Smolvm, "Helper machines of interrupted builds", "Helper machines left by an interrupted image build or init bake; deleted through `smolvm machine delete`.", Leftover, ProductCli;
    SmolvmMachineDir => "smolvm.machine_dir", Smolvm, "Machine directories", "Directories of machines that exist; delete the machine to reclaim them.", Live, Never;
    SmolvmReferencedDir => "smolvm.referenced_dir", Smolvm, "Machine directories in use", "Machine directories of no machine smolvm lists that a process or a held lock still uses.", Live, Never;
    SmolvmYoungDir => "smolvm.young_dir", Smolvm, "New machine directories", "Machine directories changed moments ago: a machine may be being created.", Live, Never;
    SmolvmReservedDir => "smolvm.reserved_dir", Smolvm, "Reserved machine directories", "Directories smolvm reserves for a machine name.", Live, Never;
    SmolvmForkLock => "smolvm.fork_lock", Smolvm, "Fork locks", "Lock files of fork operations.", Leftover, Delete;
    SmolvmSharedPack => "smolvm.shared_pack", Smolvm, "Shared image store", "Entries of smolvm's shared image store; those no machine leases are rebuilt when needed.", Rebuild, Delete;
    SmolvmSharedPackSidecar => "smolvm.shared_pack_record", Smolvm, "Shared image store records", "Digest, lock and source records of shared image store entries; they go with their entry.", Rebuild, Delete;
    SmolvmCowBases => "smolvm.cow_bases", Smolvm, "Copy-on-write bases", "Immutable disk bases of machines made from packs; those no machine's disk backs onto are rebuilt when needed.", Rebuild, Delete;
    SmolvmPauseRecord => "smolvm.pause_record", Smolvm, "Pause records", "Disk layers pinned for paused machines; left over once the machine's directory is gone.", Leftover, Delete;
    SmolvmInitStaging => "smolvm.init_staging", Smolvm, "Interrupted init bakes", "Staging folders of init-layer bakes whose process is gone; smolvm's own cache limit never counts them.", Leftover, Delete;
    SmolvmUsageLog => "smolvm.usage_log", Smolvm, "Usage log", "smolvm's log of machine events and its install id; a new id is made when needed.", Rebuild, Delete;
    SmolvmNetworkDir => "smolvm.network_dir", Smolvm, "Network sockets", "Socket folders of inter-VM networks; left over once no smolvm VM runs.", Leftover, Delete;
    SmolvmRestoreCache => "smolvm.restore_cache", Smolvm, "Restore cache", "Clones of recently restored checkpoints; only a speed-up.", Rebuild, Delete;
    SmolvmCheckpointUnpack => "smolvm.checkpoint_unpack", Smolvm, "Unpacked checkpoints", "Checkpoints unpacked for a restore; unpacked again when needed.", Rebuild, Delete;
    SmolvmPackCache => "smolvm.pack_cache", Smolvm, "Pack cache", "Downloaded machine packs; downloaded again when needed.", Rebuild, Delete;
    SmolvmLibsCache => "smolvm.libs_cache", Smolvm, "Library cache", "Extracted runtime libraries; extracted again when needed.", Rebuild, Delete;
    SmolvmRegistryCache => "smolvm.registry_cache", Smolvm, "Registry cache", "Downloaded registry blobs; downloaded again when needed.", Rebuild, Delete;
    SmolvmImageArchives => "smolvm.image_archives", Smolvm, "Image archives", "Local image archives; fetched again when needed.", Rebuild, Delete;
    SmolvmInitLayers => "smolvm.init_layers", Smolvm, "Init layers", "Image layers baked for cached runs; rebuilt when needed.", Rebuild, Delete;
    SmolvmImageSeeds => "smolvm.image_seeds", Smolvm, "Image seeds", "Seed images for fast machine creation; rebuilt when needed.", Rebuild, Delete;
    SmolvmAgentRootfsTars => "smolvm.agent_rootfs_tars", Smolvm, "Agent root file systems", "Unpacked agent root file system archives; rebuilt when needed.", Rebuild, Delete;
    SmolvmRootfsCache => "smolvm.rootfs_cache", Smolvm, "Root file system cache", "Root file systems extracted for SDK runs; rebuilt when needed.", Rebuild, Delete;
    SmolvmTmpBuildTree => "smolvm.tmp_build_tree", Smolvm, "Temporary build trees", "Temporary trees of image builds no smolvm process uses.", Leftover, Delete;
    SmolvmRegistryTokens => "smolvm.registry_tokens", Smolvm, "Registry credentials", "Saved registry logins: never removed, except by an uninstall that removes credentials.", Credential, Never;
    SmolvmMountPoint => "smolvm.mount_point", Smolvm, "Mount points", "A file system is mounted here; never walked into or deleted through.", Live, Never;
    SmolvmOddFile => "smolvm.odd_file", Smolvm, "Not regular files", "A named pipe, socket or device where smolvm stores a file; never read or deleted.", Unverified, Never;
    SmolvmUnrecognised => "smolvm.unrecognised", Smolvm, "Unrecognised entries", "Names smolvm does not write; left alone.", Unverified, Never;
}

impl FindingKind {
    /// The product whose state this is.
    pub const fn product(self) -> Product {
        self.row().0
    }
    /// What a group of these is called on every surface ("Orphaned disks").
    pub const fn label(self) -> &'static str {
        self.row().1
    }
    /// One sentence saying what these are.
    pub const fn meaning(self) -> &'static str {
        self.row().2
    }
    /// What removing one costs its owner.
    pub const fn risk(self) -> Risk {
        self.row().3
    }
    /// How one is removed when a plan includes it (`Removal::Never`: it never is).
    pub const fn removal(self) -> Removal {
        self.row().4
    }
    /// Whether a reclaimable finding of this kind is what a person calls an orphan: the storage
    /// of a sandbox or machine that no longer exists (what the desktop notifies about).
    pub const fn is_orphan(self) -> bool {
        matches!(
            self,
            FindingKind::CelestoOrphanDisk
                | FindingKind::CelestoOrphanLog
                | FindingKind::CelestoOrphanCompanion
                | FindingKind::SmolvmDanglingDir
                | FindingKind::SmolvmDeadEphemeralDir
                | FindingKind::SmolvmHelperMachineDir
        )
    }
    /// What part a finding of this kind plays in the item it belongs to (see [`Part`]): one
    /// exhaustive table, so a new kind must say where it stands.
    pub(crate) const fn part(self) -> Part {
        use FindingKind as K;
        match self {
            K::CelestoOrphanDisk
            | K::CelestoSavedDisk
            | K::CelestoSandboxDisk
            | K::CelestoYoungDisk
            | K::CelestoInUseDisk
            | K::CelestoDiskSymlink
            | K::SmolvmDanglingDir
            | K::SmolvmEmptyDir
            | K::SmolvmNameOnlyDir
            | K::SmolvmDeadEphemeralDir
            | K::SmolvmHelperMachineDir
            | K::SmolvmMachineDir
            | K::SmolvmReferencedDir
            | K::SmolvmYoungDir
            | K::SmolvmReservedDir
            | K::SmolvmSharedPack => Part::Principal,
            K::CelestoDiskCompanion
            | K::CelestoSavedCompanion
            | K::CelestoSandboxDiskCompanion
            | K::CelestoYoungCompanion
            | K::CelestoInUseCompanion
            | K::SmolvmSharedPackSidecar => Part::Companion,
            K::CelestoOrphanLog
            | K::CelestoSavedLog
            | K::CelestoSandboxLog
            | K::CelestoYoungLog
            | K::CelestoInUseLog => Part::Log,
            K::CelestoFirmwareResidue | K::CelestoKnownHostsResidue => Part::WhileSaved,
            K::CelestoLockResidue => Part::Lock,
            K::CelestoOrphanCompanion
            | K::CelestoUnrecognisedLog
            | K::CelestoImageCache
            | K::CelestoImageCacheStale
            | K::CelestoImageCacheCurrent
            | K::CelestoImageCacheNewer
            | K::CelestoImageCacheInUse
            | K::CelestoImageCacheLink
            | K::CelestoRestoreImage
            | K::CelestoBuildStaging
            | K::CelestoSnapshot
            | K::CelestoMacosVmResidue
            | K::CelestoBrowserSessionResidue
            | K::CelestoForwardResidue
            | K::CelestoSocketResidue
            | K::CelestoLibkrunConfig
            | K::CelestoMountPoint
            | K::CelestoOddFile
            | K::CelestoUnrecognised
            | K::SmolvmForkLock
            | K::CelestoCustomImage
            | K::CelestoCustomImageTmp
            | K::CelestoS3Image
            | K::CelestoCloudInitSeed
            | K::CelestoMacosImage
            | K::CelestoMacosImageFailed
            | K::CelestoOldLume
            | K::CelestoDashboardAssets
            | K::SmolvmCowBases
            | K::SmolvmPauseRecord
            | K::SmolvmInitStaging
            | K::SmolvmUsageLog
            | K::SmolvmNetworkDir
            | K::SmolvmRestoreCache
            | K::SmolvmCheckpointUnpack
            | K::SmolvmPackCache
            | K::SmolvmLibsCache
            | K::SmolvmRegistryCache
            | K::SmolvmImageArchives
            | K::SmolvmInitLayers
            | K::SmolvmImageSeeds
            | K::SmolvmAgentRootfsTars
            | K::SmolvmRootfsCache
            | K::SmolvmTmpBuildTree
            | K::SmolvmRegistryTokens
            | K::SmolvmMountPoint
            | K::SmolvmOddFile
            | K::SmolvmUnrecognised => Part::Alone,
        }
    }
    /// The label as one word a person can type (`orphaned-disks` for "Orphaned disks"):
    /// lower case, every run of other characters one `-`. Derived from the label, so it is the
    /// name the screen shows; `--kind` takes it beside the stable string. Two products' kinds
    /// may share one ("mount-points"); scripts should use the stable string.
    pub fn short(self) -> &'static str {
        static SHORT: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let all = SHORT.get_or_init(|| FindingKind::ALL.iter().map(|k| slug(k.label())).collect());
        let i = FindingKind::ALL
            .iter()
            .position(|k| *k == self)
            .unwrap_or(0);
        all[i].as_str()
    }
    /// The kinds a name a person typed means: the one its stable string names
    /// (`celesto.orphan_disk`), or every kind whose [`short`](Self::short) name it is
    /// (`orphaned-disks`; `mount-points` names both products' mount points). Empty when it
    /// names none.
    pub fn named(name: &str) -> Vec<FindingKind> {
        if let Some(k) = FindingKind::parse(name) {
            return vec![k];
        }
        let name = name.trim().to_ascii_lowercase();
        FindingKind::ALL
            .iter()
            .copied()
            .filter(|k| k.short() == name)
            .collect()
    }
    /// The mount-point kind of a product.
    pub const fn mount_point(p: Product) -> FindingKind {
        match p {
            Product::Celesto => FindingKind::CelestoMountPoint,
            Product::Smolvm => FindingKind::SmolvmMountPoint,
        }
    }
}

/// `s` in lower case with every run of characters that are not letters or digits one `-`.
fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

crate::table::closed_table! {
    /// What a VM process is, by the shape its argv and comm show (`procs::shape::VmmShape`
    /// reads it off a process). Serialised as its stable name (`smolvm.boot_vm`).
    pub enum ProcShape ("process shape") -> (Product, &'static str) {
        /// smolvm's exec'd boot child, `_boot-vm <vmdir>/boot-config.json`: one machine's VM.
        SmolvmBootVm => "smolvm.boot_vm", (Product::Smolvm, "smolvm machine VM");
        /// smolvm's forked pack-run child (`machine run` / `pack run`), known by libkrun's comm
        /// rename on Linux.
        SmolvmForked => "smolvm.forked", (Product::Smolvm, "smolvm pack-run VM");
        /// Celesto's QEMU VMM (`qemu-system-*`), its sandbox named by the QMP socket.
        CelestoQemu => "celesto.qemu", (Product::Celesto, "Celesto QEMU VM");
        /// Celesto's Firecracker VMM, its sandbox named by the API socket.
        CelestoFirecracker => "celesto.firecracker", (Product::Celesto, "Celesto Firecracker VM");
        /// Celesto's libkrun launcher (a Python process), its sandbox named by its config file.
        CelestoLibkrun => "celesto.libkrun", (Product::Celesto, "Celesto libkrun VM");
    }
}

impl ProcShape {
    /// The product whose VMM this is.
    pub const fn product(self) -> Product {
        self.row().0
    }
    /// What a VM process of this shape is, for a person ("Celesto QEMU VM").
    pub const fn label(self) -> &'static str {
        self.row().1
    }
    /// The label of a shape a plan records by its stable name; "VM process" for a name that is
    /// no shape (a plan written without one).
    pub(crate) fn label_of(shape: &str) -> &'static str {
        ProcShape::parse(shape).map_or("VM process", ProcShape::label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_unique_prefixed_by_product_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for k in FindingKind::ALL {
            assert!(seen.insert(k.as_str()), "{k} twice");
            assert!(k
                .as_str()
                .starts_with(&format!("{}.", k.product().as_str())));
            assert_eq!(FindingKind::parse(k.as_str()), Some(*k));
            let j = serde_json::to_string(k).unwrap();
            assert_eq!(serde_json::from_str::<FindingKind>(&j).unwrap(), *k);
        }
        assert!(serde_json::from_str::<FindingKind>("\"celesto.nope\"").is_err());
    }

    #[test]
    fn labels_and_meanings_speak_to_people() {
        for k in FindingKind::ALL {
            for text in [k.label(), k.meaning()] {
                assert!(!text.contains('_'), "{k}: internal name in {text:?}");
                assert!(
                    !text
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w.len() >= 2
                            && w.starts_with('B')
                            && w[1..].chars().all(|c| c.is_ascii_digit())),
                    "{k}: upstream bug number in {text:?}"
                );
            }
            assert!(k.meaning().ends_with('.'), "{k}: meaning is a sentence");
        }
    }

    #[test]
    fn short_names_are_the_labels_typed_and_name_the_kinds_they_are_of() {
        assert_eq!(FindingKind::CelestoOrphanDisk.short(), "orphaned-disks");
        assert_eq!(
            FindingKind::CelestoRestoreImage.short(),
            "macos-restore-images"
        );
        for k in FindingKind::ALL {
            let s = k.short();
            assert!(
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{k}: {s:?}"
            );
            assert!(FindingKind::named(s).contains(k), "{k}: {s}");
            assert_eq!(FindingKind::named(k.as_str()), vec![*k]);
            // A short name shared by two kinds is the same thing of two products.
            for other in FindingKind::named(s) {
                assert!(other == *k || other.product() != k.product(), "{k} {other}");
            }
        }
        assert_eq!(FindingKind::named("mount-points").len(), 2);
        assert!(FindingKind::named("nope").is_empty());
    }

    #[test]
    fn shapes_round_trip_and_a_name_that_is_no_shape_reads_as_a_vm_process() {
        for s in ProcShape::ALL {
            assert!(s
                .as_str()
                .starts_with(&format!("{}.", s.product().as_str())));
            let j = serde_json::to_string(s).unwrap();
            assert_eq!(serde_json::from_str::<ProcShape>(&j).unwrap(), *s);
            assert_eq!(ProcShape::label_of(s.as_str()), s.label());
        }
        assert_eq!(ProcShape::label_of(""), "VM process");
        assert!(serde_json::from_str::<ProcShape>("\"smolvm.nope\"").is_err());
    }

    #[test]
    fn kinds_never_removed_are_the_live_and_unverified_ones() {
        for k in FindingKind::ALL {
            let never = k.removal() == Removal::Never;
            let kept = matches!(k.risk(), Risk::Live | Risk::Unverified | Risk::Credential);
            assert_eq!(never, kept, "{k}");
        }
    }
}
