//! Everything each product writes, as one table per product ([`smolvm::ROWS`],
//! [`celesto::ROWS`]), for the versions Smolsweep verified (`crate::upstream::VERIFIED`): where
//! it lies (a [`Place`]: a root, or a directory of rows inside one, and a [`Name`] or shape),
//! what it is in words, what it becomes in a scan ([`Is`]: finding kinds, a directory of rows of
//! its own, a member of the finding it lies in, or never a finding and why), the references it
//! declares to other state ([`Declares`]: read by the reference graph, `crate::reach`), how
//! upstream cleans it, and the first version that writes it.
//!
//! Everything that matches names against what the products write asks this table: the scan's
//! dispatch (which judge a name goes to), the uninstall (which entries of a state directory are
//! the product's), and the verifier (which entries of `vms/` are never machines). A new upstream
//! file is one row here plus its fixture; `src/tests/layout.rs` lays out every row's example
//! and checks that the scan and the uninstall both know it.
//!
//! Facts from `shared/reference` (smol-machines-smolvm.md §2, census-2026-12.md; celesto-smolvm.md
//! §2–3) and upstream's source where the census names it.

use crate::kind::FindingKind;
use crate::product::Product;
use crate::root_kind::RootKind;

pub(crate) mod celesto;
pub(crate) mod smolvm;

crate::table::closed_table! {
    /// A directory inside a product root whose entries have rows of their own.
    pub(crate) enum Sub ("layout place") -> (Product, &'static str) {
        /// `vms/_shared`: extractions of `.smolmachine` packs shared by machines.
        SmolvmShared => "smolvm.shared", (Product::Smolvm, "the shared image store (vms/_shared)");
        /// `vms/_cow-bases`: copy-on-write disk bases, one directory per artifact digest.
        SmolvmCowBases => "smolvm.cow_bases", (Product::Smolvm, "the copy-on-write bases (vms/_cow-bases)");
        /// `vms/<hash16>`: one machine's directory.
        SmolvmMachine => "smolvm.machine", (Product::Smolvm, "a machine directory");
        /// `<cache root>/init-layers`: baked init layers and their staging folders.
        SmolvmInitLayers => "smolvm.init_layers", (Product::Smolvm, "the init-layer cache");
        /// `<cache root>/net`: one socket folder per inter-VM network.
        SmolvmNet => "smolvm.net", (Product::Smolvm, "the network socket folders");
        /// `<image dir>/custom`: custom image builds, a folder per image name.
        CelestoCustom => "celesto.custom", (Product::Celesto, "the custom image builds");
        /// `<image dir>/custom/<name>`: one build per build-context fingerprint.
        CelestoCustomName => "celesto.custom_name", (Product::Celesto, "the builds of one custom image");
        /// `<image dir>/custom/<name>/<fingerprint>`: one build.
        CelestoCustomBuild => "celesto.custom_build", (Product::Celesto, "one custom image build");
        /// `<image dir>/s3`: images downloaded from S3, one folder per URI.
        CelestoS3 => "celesto.s3", (Product::Celesto, "the S3 image downloads");
        /// `<image dir>/cloud-init-seeds`: seed disks of S3 images with an initrd.
        CelestoSeeds => "celesto.cloud_init_seeds", (Product::Celesto, "the cloud-init seeds");
        /// `<image dir>/macos`: macOS image bundles, their build logs and locks.
        CelestoMacos => "celesto.macos_images", (Product::Celesto, "the macOS image bundles");
        /// `~/.celesto/lib`: tools Celesto installs for itself (lume).
        CelestoLib => "celesto.lib", (Product::Celesto, "Celesto's tools");
    }
}

impl Sub {
    /// The product writing it.
    #[cfg(test)]
    pub(crate) const fn product(self) -> Product {
        self.row().0
    }
    /// What it is, in words.
    pub(crate) const fn what(self) -> &'static str {
        self.row().1
    }
}

/// Where a row's entries lie: directly inside a product root, or inside a directory of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    /// Directly inside a root of this kind.
    Root(RootKind),
    /// Directly inside a directory with rows of its own.
    In(Sub),
}

/// How an entry's name is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// Exactly this name.
    Exact(&'static str),
    /// `n` lowercase hexadecimal digits.
    Hex(usize),
    /// `n` lowercase hexadecimal digits, then this suffix (`1a2b3c4d.lock`).
    HexThen(usize, &'static str),
    /// This prefix, then at least one character.
    Prefix(&'static str),
    /// At least one character, then this suffix.
    Suffix(&'static str),
    /// `.`, a name, then this suffix (`.web.fork-operation.lock`).
    DotNameThen(&'static str),
    /// A published image cache name (`<preset>-v<version>-<arch>-<vmm>`).
    PublishedImage,
    /// One of Celesto's inventories (`celesto.db`, PyPI smolvm's `smolvm.db`), or a side file
    /// SQLite writes beside it (`crate::upstream`'s table).
    Inventory,
    /// Any name (a directory whose every entry is the product's).
    Any,
}

impl Name {
    /// Whether `n` is such a name.
    pub(crate) fn matches(self, n: &str) -> bool {
        let hex = |s: &str, len: usize| {
            s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        match self {
            Name::Exact(e) => n == e,
            Name::Hex(len) => hex(n, len),
            Name::HexThen(len, sfx) => n.strip_suffix(sfx).is_some_and(|s| hex(s, len)),
            Name::Prefix(p) => n.len() > p.len() && n.starts_with(p),
            Name::Suffix(s) => n.len() > s.len() && n.ends_with(s),
            Name::DotNameThen(s) => n
                .strip_prefix('.')
                .and_then(|r| r.strip_suffix(s))
                .is_some_and(|m| !m.is_empty()),
            Name::PublishedImage => published_image(n),
            Name::Inventory => crate::upstream::is_inventory_file(Product::Celesto, n),
            Name::Any => !n.is_empty(),
        }
    }
    /// Exact names first, then the shapes from the most to the least specific.
    const fn precedence(self) -> u8 {
        match self {
            Name::Exact(_) => 0,
            Name::HexThen(..) | Name::DotNameThen(_) => 1,
            Name::Hex(_) | Name::Inventory => 2,
            Name::Prefix(_) | Name::Suffix(_) => 3,
            Name::PublishedImage => 4,
            Name::Any => 5,
        }
    }
}

/// `<preset>-v<version>-<arch>-<vmm>`: at least four dash-separated parts, one of them a version.
fn published_image(n: &str) -> bool {
    let parts: Vec<&str> = n.split('-').collect();
    parts.len() >= 4
        && parts.iter().any(|p| {
            p.strip_prefix('v')
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        })
}

crate::table::closed_table! {
    /// Why something a product writes is never a finding of its own.
    pub(crate) enum Never ("never a finding") -> (&'static str,) {
        /// An inventory or its side files: read, never deleted.
        Inventory => "inventory", ("the product's own records");
        /// Installed by the product itself (agent root file system, templates, init).
        ProductFiles => "product_files", ("part of the installed product");
        /// Your data (volumes, checkpoint stores).
        UserData => "user_data", ("your data");
        /// Credentials and settings.
        Credential => "credential", ("credentials or settings");
        /// Small files the product keeps for itself (locks, policies).
        Bookkeeping => "bookkeeping", ("the product's bookkeeping");
    }
}

impl Never {
    /// In words ("your data").
    pub(crate) const fn what(self) -> &'static str {
        self.row().0
    }
}

/// What an entry becomes in a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Is {
    /// A finding of one of these kinds (the judge of the first decides which).
    Found(&'static [FindingKind]),
    /// A finding of one of these kinds, and a directory whose entries have rows of their own.
    FoundHolding(&'static [FindingKind], Sub),
    /// A directory whose entries have rows of their own.
    Holds(Place),
    /// A directory each of whose entries is a finding of one of these kinds.
    Entries(&'static [FindingKind]),
    /// Part of the finding it lies in (a machine's disk, an image's files).
    Member,
    /// Never a finding of its own.
    Never(Never),
}

crate::table::closed_table! {
    /// A reference an entry declares to other state, read by the reference graph.
    pub(crate) enum Declares ("declared reference") -> (&'static str,) {
        /// A qcow2 disk names its backing file in its header (and that one may name another).
        QcowBacking => "qcow2_backing", ("its qcow2 header names its backing file");
        /// A machine's `.pack-shared` names the `_shared/<crc8>` extraction it leases.
        PackPointer => "pack_pointer", ("its .pack-shared file names the shared extraction it leases");
        /// The extraction's `.artifact-sha256` names the digest its copy-on-write bases are kept under.
        ArtifactDigest => "artifact_digest", ("its digest names the copy-on-write bases made from it");
        /// A `<crc8>.*` record beside `_shared/<crc8>/` belongs to it.
        SidecarOf => "sidecar_of", ("it belongs to the shared extraction of the same name");
        /// A pause record `<hash16>.paused-*` belongs to the machine directory `<hash16>`.
        PauseOf => "pause_of", ("it belongs to the paused machine of the same hash");
        /// A Celesto inventory row names the root file system, kernel, initrd and drives it boots.
        RowDrives => "row_drives", ("its rows name the images and drives their sandboxes boot");
    }
}

impl Declares {
    /// In words.
    pub(crate) const fn what(self) -> &'static str {
        self.row().0
    }
}

/// One thing a product writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    /// Where it lies.
    pub at: Place,
    /// Its name or shape.
    pub name: Name,
    /// A name of that shape, for fixtures and tests (`src/tests/layout.rs` lays out each).
    #[cfg_attr(not(test), allow(dead_code))]
    pub example: &'static str,
    /// What it is, in words.
    pub what: &'static str,
    /// What it becomes in a scan.
    pub is: Is,
    /// References it declares.
    pub declares: &'static [Declares],
    /// How upstream itself cleans it.
    pub cleans: &'static str,
    /// The first verified version that writes it.
    pub since: &'static str,
    /// What the product makes there: a directory (the default), a file or a socket.
    #[cfg_attr(not(test), allow(dead_code))]
    pub made: Made,
}

/// What a product makes at a row's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Made {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A Unix socket.
    Socket,
}

/// A row with no declared reference, made as a directory (the products' tables call it `row`).
pub(crate) const fn plain(
    at: Place,
    name: Name,
    example: &'static str,
    what: &'static str,
    is: Is,
    cleans: &'static str,
    since: &'static str,
) -> Row {
    Row {
        at,
        name,
        example,
        what,
        is,
        declares: &[],
        cleans,
        since,
        made: Made::Dir,
    }
}

/// `r`, made as a regular file.
pub(crate) const fn file(r: Row) -> Row {
    Row {
        made: Made::File,
        ..r
    }
}

/// `r`, made as a Unix socket.
pub(crate) const fn socket(r: Row) -> Row {
    Row {
        made: Made::Socket,
        ..r
    }
}

impl Row {
    /// The product writing it.
    #[cfg(test)]
    pub(crate) const fn product(&self) -> Product {
        match self.at {
            Place::Root(k) => k.product(),
            Place::In(s) => s.product(),
        }
    }
    /// The kinds a finding of it may have (none for a directory of rows, a member or a never).
    pub(crate) const fn kinds(&self) -> &'static [FindingKind] {
        match self.is {
            Is::Found(k) | Is::FoundHolding(k, _) | Is::Entries(k) => k,
            _ => &[],
        }
    }
    /// Whether it holds credentials (kept by an uninstall unless asked).
    pub(crate) fn credential(&self) -> bool {
        matches!(self.is, Is::Never(Never::Credential))
            || self
                .kinds()
                .iter()
                .any(|k| k.risk() == crate::kind::Risk::Credential)
    }
}

/// Every row of both products.
pub(crate) fn all() -> impl Iterator<Item = &'static Row> {
    smolvm::ROWS.iter().chain(celesto::ROWS.iter())
}

/// The row of `name` directly inside `at`: an exact name before a shape, a narrower shape before
/// a wider one.
pub(crate) fn row(at: Place, name: &str) -> Option<&'static Row> {
    all()
        .filter(|r| r.at == at && r.name.matches(name))
        .min_by_key(|r| r.name.precedence())
}

/// The rows directly inside `at`.
pub(crate) fn rows_at(at: Place) -> impl Iterator<Item = &'static Row> {
    all().filter(move |r| r.at == at)
}

/// Whether `name` in a product's `vms/` is a machine directory's name (its other entries never
/// are machines: stores, caches, pause records, locks, bookkeeping).
pub(crate) fn is_machine_dir_name(name: &str) -> bool {
    row(Place::Root(RootKind::VmsDir), name)
        .is_some_and(|r| matches!(r.is, Is::FoundHolding(_, Sub::SmolvmMachine)))
}

/// The row a path is or lies in, below the root `root` of kind `kind`: the row of its first
/// component there, then of each next component in the directory of rows that row leads to; and
/// whether the path is that row's entry itself (rather than something inside it). `None` when no
/// row knows a component, or `path` is `root` itself.
pub(crate) fn row_of(
    kind: RootKind,
    root: &std::path::Path,
    path: &std::path::Path,
) -> Option<(&'static Row, bool)> {
    let rest = path.strip_prefix(root).ok()?;
    let n = rest.components().count();
    let mut place = Place::Root(kind);
    for (i, c) in rest.components().enumerate() {
        let r = row(place, c.as_os_str().to_str()?)?;
        place = match r.is {
            Is::Holds(p) if i + 1 < n => p,
            Is::FoundHolding(_, s) if i + 1 < n => Place::In(s),
            _ => return Some((r, i + 1 == n)),
        };
    }
    None
}

/// Whether `name` in a product's `vms/` is something the layout table says is never a machine
/// and never a leftover of one (shared stores, bases, restore caches, bookkeeping): what the
/// verifier does not count as a machine left behind. A name no row knows may be one.
pub(crate) fn never_a_machine(name: &str) -> bool {
    row(Place::Root(RootKind::VmsDir), name).is_some_and(|r| match r.is {
        Is::FoundHolding(..) | Is::Member | Is::Entries(_) => false,
        Is::Holds(_) | Is::Never(_) => true,
        Is::Found(k) => k
            .iter()
            .all(|k| k.risk() == crate::kind::Risk::Rebuild || k.risk() == crate::kind::Risk::Live),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rows_example_is_its_own_shape_and_finds_its_own_row() {
        for r in all() {
            assert!(r.name.matches(r.example), "{:?}: {}", r.at, r.example);
            let found = row(r.at, r.example).expect("a row");
            assert!(
                std::ptr::eq(found, r) || found.name.precedence() < r.name.precedence(),
                "{:?} {} is found as {:?}",
                r.at,
                r.example,
                found.name
            );
            assert!(
                !r.what.ends_with('.') && !r.what.is_empty(),
                "{}: words, not a sentence",
                r.example
            );
            assert!(!r.cleans.is_empty() && !r.since.is_empty());
        }
    }

    #[test]
    fn no_two_rows_share_a_place_and_a_name() {
        let rows: Vec<&Row> = all().collect();
        for (i, a) in rows.iter().enumerate() {
            for b in &rows[i + 1..] {
                assert!(
                    !(a.at == b.at && a.name == b.name),
                    "{:?} {:?} twice",
                    a.at,
                    a.name
                );
            }
        }
    }

    #[test]
    fn every_directory_of_rows_has_rows_and_is_held_by_one() {
        for s in Sub::ALL {
            assert!(rows_at(Place::In(*s)).next().is_some(), "{s}: no rows");
            assert!(
                all().any(
                    |r| matches!(r.is, Is::Holds(Place::In(x)) | Is::FoundHolding(_, x) if x == *s)
                ),
                "{s}: no row leads to it"
            );
            for r in rows_at(Place::In(*s)) {
                assert_eq!(r.product(), s.product(), "{s}: {}", r.example);
            }
        }
    }

    #[test]
    fn a_finding_kind_a_row_names_is_of_the_rows_product() {
        for r in all() {
            for k in r.kinds() {
                assert_eq!(k.product(), r.product(), "{}: {k}", r.example);
            }
        }
    }
}
