//! Everything Celesto SmolVM (celesto 0.1.10, PyPI smolvm 0.0.36) writes under its roots, one
//! row each. Evidence: celesto-smolvm.md §2–3, census-2026-12.md §2, the 0.1.10 wheel's
//! `images/builder.py`, `images/manager.py`, `macos/images.py`, `host/lume.py`,
//! `dashboard/server.py`, `runtime/_libkrun_launcher.py`.

use super::{file, plain as row, socket, Declares as D, Is, Made, Name, Never, Place, Row, Sub};
use crate::kind::FindingKind as K;
use crate::root_kind::RootKind as R;

const DATA: Place = Place::Root(R::DataDir);
const IMAGES: Place = Place::Root(R::ImageDir);
const HOME: Place = Place::Root(R::CelestoHome);
const SOCKETS: Place = Place::Root(R::SocketDir);

const DISK_KINDS: &[K] = &[
    K::CelestoOrphanDisk,
    K::CelestoDiskCompanion,
    K::CelestoOrphanCompanion,
    K::CelestoDiskSymlink,
    K::CelestoSavedDisk,
    K::CelestoSavedCompanion,
    K::CelestoSandboxDisk,
    K::CelestoSandboxDiskCompanion,
    K::CelestoYoungDisk,
    K::CelestoYoungCompanion,
    K::CelestoInUseDisk,
    K::CelestoInUseCompanion,
    K::CelestoUnrecognised,
];

const LOG_KINDS: &[K] = &[
    K::CelestoOrphanLog,
    K::CelestoSavedLog,
    K::CelestoSandboxLog,
    K::CelestoYoungLog,
    K::CelestoInUseLog,
    K::CelestoUnrecognisedLog,
];

const IMAGE_CACHE_KINDS: &[K] = &[
    K::CelestoImageCache,
    K::CelestoImageCacheStale,
    K::CelestoImageCacheCurrent,
    K::CelestoImageCacheNewer,
    K::CelestoImageCacheInUse,
    K::CelestoImageCacheLink,
    K::CelestoUnrecognised,
];

/// The rows, root by root.
pub(crate) const ROWS: &[Row] = &[
    // ---- a data directory (`~/.local/state/celesto`, `/var/lib/celesto`, ...)
    Row {
        declares: &[D::RowDrives],
        made: Made::File,
        ..row(DATA, Name::Inventory, "celesto.db", "the sandbox inventory (celesto.db, or smolvm.db of PyPI smolvm) and SQLite's side files", Is::Never(Never::Inventory), "never", "0.0.1")
    },
    Row {
        declares: &[D::QcowBacking],
        ..row(DATA, Name::Exact("disks"), "disks", "sandbox disks (`<id>.qcow2`, `<id>.ext4`) and their companion files", Is::Entries(DISK_KINDS), "`celesto sandbox prune` for disks of deleted sandboxes without a .retained marker", "0.0.1")
    },
    file(row(DATA, Name::Suffix(".log"), "vm-abc123.log", "a sandbox's console log", Is::Found(LOG_KINDS), "`celesto sandbox prune` (any *.log)", "0.0.1")),
    row(DATA, Name::Exact("snapshots"), "snapshots", "sandbox snapshots", Is::Entries(&[K::CelestoSnapshot]), "`celesto snapshot delete`", "0.0.20"),
    row(DATA, Name::Exact("firmware"), "firmware", "firmware variables and TPM state of sandboxes", Is::Entries(&[K::CelestoFirmwareResidue]), "`celesto sandbox delete`", "0.1.0"),
    row(DATA, Name::Exact("locks"), "locks", "lock files of sandboxes and snapshots", Is::Entries(&[K::CelestoLockResidue]), "never", "0.0.20"),
    row(DATA, Name::Exact("ssh-known-hosts"), "ssh-known-hosts", "pinned SSH host keys of sandboxes", Is::Entries(&[K::CelestoKnownHostsResidue]), "`celesto sandbox delete`", "0.1.0"),
    row(DATA, Name::Exact("browser-sessions"), "browser-sessions", "browser-session files of sandboxes", Is::Entries(&[K::CelestoBrowserSessionResidue]), "`celesto sandbox delete`", "0.1.0"),
    row(DATA, Name::Exact("macos-vms"), "macos-vms", "macOS VM bundles of sandboxes", Is::Entries(&[K::CelestoMacosVmResidue]), "`celesto sandbox delete`", "0.1.0"),
    row(DATA, Name::Exact("dashboard-ui"), "dashboard-ui", "the dashboard's web assets and the release tag they are of", Is::Found(&[K::CelestoDashboardAssets]), "downloaded again when a newer release is tagged", "0.1.5"),
    // ---- an image cache (`~/.celesto/images`, `~/.smolvm/images`)
    row(IMAGES, Name::PublishedImage, "ubuntu-v0.1.10-amd64-qemu", "a published guest image of one Celesto version", Is::Found(IMAGE_CACHE_KINDS), "`celesto image prune` for versions older than the installed one", "0.0.1"),
    row(IMAGES, Name::Exact("custom"), "custom", "custom image builds (Dockerfiles and templates)", Is::Holds(Place::In(Sub::CelestoCustom)), "`celesto image rm` only (`image prune` leaves unversioned folders alone)", "0.1.8"),
    row(IMAGES, Name::Exact("s3"), "s3", "images downloaded from S3, one folder per URI", Is::Holds(Place::In(Sub::CelestoS3)), "never", "0.1.6"),
    row(IMAGES, Name::Exact("cloud-init-seeds"), "cloud-init-seeds", "cloud-init seed disks of S3 images with an initrd", Is::Holds(Place::In(Sub::CelestoSeeds)), "never", "0.1.6"),
    row(IMAGES, Name::Exact("macos"), "macos", "macOS image bundles, their build logs and restore images", Is::Holds(Place::In(Sub::CelestoMacos)), "`celesto image rm` only", "0.1.0"),
    file(row(IMAGES, Name::Suffix(".lock"), "ubuntu-v0.1.10-amd64-qemu.lock", "the lock of an image download", Is::Never(Never::Bookkeeping), "never", "0.0.1")),
    row(IMAGES, Name::Prefix(".build-"), ".build-1a2b3c4d", "the staging folder of an image build (also inside an image's own folder)", Is::Found(&[K::CelestoBuildStaging]), "removed when the build ends; a killed build leaves it", "0.0.30"),
    // ---- custom builds: `custom/<name>/<fingerprint>/`
    row(Place::In(Sub::CelestoCustom), Name::Any, "web-app", "the builds of one custom image name", Is::Holds(Place::In(Sub::CelestoCustomName)), "`celesto image rm`", "0.1.8"),
    row(Place::In(Sub::CelestoCustomName), Name::Any, "3f9a0c1d2e4b5a6978f0e1d2c3b4a596", "one build of a custom image (one per build-context fingerprint)", Is::FoundHolding(&[K::CelestoCustomImage, K::CelestoCustomImageTmp], Sub::CelestoCustomBuild), "`celesto image rm`; a changed build context makes a new one and leaves the old", "0.1.8"),
    file(row(Place::In(Sub::CelestoCustomBuild), Name::Exact(".rootfs.tmp.ext4"), ".rootfs.tmp.ext4", "the root file system of a build under way, or of one that was killed (a build without rootfs.ext4 is left over whole)", Is::Member, "removed when the build ends; a killed build leaves it", "0.1.8")),
    file(row(Place::In(Sub::CelestoCustomBuild), Name::Exact("rootfs.ext4"), "rootfs.ext4", "the built root file system", Is::Member, "`celesto image rm`", "0.1.8")),
    file(row(Place::In(Sub::CelestoCustomBuild), Name::Exact("metadata.json"), "metadata.json", "the build's fingerprint inputs", Is::Member, "`celesto image rm`", "0.1.8")),
    file(row(Place::In(Sub::CelestoCustomBuild), Name::Exact(".build.lock"), ".build.lock", "the lock a build holds while it runs", Is::Member, "`celesto image rm`", "0.1.8")),
    // ---- S3 images and seeds
    row(Place::In(Sub::CelestoS3), Name::Hex(16), "0a1b2c3d4e5f6a7b", "an image downloaded from one S3 URI (kernel, rootfs, initrd)", Is::Found(&[K::CelestoS3Image]), "never", "0.1.6"),
    file(row(Place::In(Sub::CelestoSeeds), Name::Suffix(".iso"), "0a1b2c3d.iso", "a cloud-init seed disk", Is::Found(&[K::CelestoCloudInitSeed]), "never", "0.1.6")),
    // ---- macOS images
    row(Place::In(Sub::CelestoMacos), Name::Exact(".downloads"), ".downloads", "macOS restore images (IPSW) downloaded for builds", Is::Entries(&[K::CelestoRestoreImage]), "never", "0.1.0"),
    file(row(Place::In(Sub::CelestoMacos), Name::Suffix(".build.log"), "sonoma.build.log", "the log of a macOS image build", Is::Never(Never::Bookkeeping), "`celesto image rm`", "0.1.0")),
    file(row(Place::In(Sub::CelestoMacos), Name::Suffix(".build.lock"), ".sonoma.build.lock", "the lock of a macOS image build", Is::Never(Never::Bookkeeping), "`celesto image rm`", "0.1.0")),
    row(Place::In(Sub::CelestoMacos), Name::Any, "sonoma", "a macOS image bundle (one without celesto-manifest.json is a build that did not finish)", Is::Found(&[K::CelestoMacosImage, K::CelestoMacosImageFailed]), "`celesto image rm` only", "0.1.0"),
    // ---- Celesto's home (`~/.celesto`)
    row(HOME, Name::Exact("lib"), "lib", "tools Celesto installs for itself", Is::Holds(Place::In(Sub::CelestoLib)), "never", "0.1.0"),
    row(Place::In(Sub::CelestoLib), Name::Prefix("lume-"), "lume-0.3.2", "one version of the lume tool (macOS guests)", Is::Found(&[K::CelestoOldLume]), "never: `celesto setup --macos` installs the pinned version beside the old ones", "0.1.0"),
    // ---- the socket directory (`/tmp`, shared by every user: only this HOME's files are its)
    socket(row(SOCKETS, Name::Prefix("krun-gvproxy-"), "krun-gvproxy-1a2b3c4d.sock", "the network socket of a libkrun sandbox's gvproxy (macOS)", Is::Found(&[K::CelestoSocketResidue]), "unlinked when the launcher exits normally", "0.1.0")),
    socket(row(SOCKETS, Name::Prefix("qmp-"), "qmp-vm-abc123.sock", "a QEMU sandbox's monitor socket", Is::Found(&[K::CelestoSocketResidue]), "`celesto sandbox delete`", "0.0.1")),
    socket(row(SOCKETS, Name::Prefix("fc-"), "fc-vm-abc123.sock", "a Firecracker sandbox's API socket", Is::Found(&[K::CelestoSocketResidue]), "`celesto sandbox delete`", "0.0.1")),
    socket(row(SOCKETS, Name::Prefix("vsock-"), "vsock-vm-abc123.sock", "a sandbox's vsock socket", Is::Found(&[K::CelestoSocketResidue]), "`celesto sandbox delete`", "0.0.1")),
    file(row(SOCKETS, Name::Prefix("libkrun-"), "libkrun-vm-abc123-0123456789abcdef0123456789abcdef.json", "a libkrun sandbox's launcher config", Is::Found(&[K::CelestoLibkrunConfig]), "`celesto sandbox delete`", "0.1.0")),
];
