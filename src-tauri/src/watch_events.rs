//! Which file system events can change what a scan finds, for the watcher of the `notify`
//! crate (`watch_notify.rs`: FSEvents on macOS). Plain data over `notify-types`' events, compiled
//! and tested on every platform; Linux's own watcher (`watch.rs`) decides over inotify masks.

// Called from the watcher that runs where inotify is not (`watch_notify.rs`) only.
#![cfg_attr(target_os = "linux", allow(dead_code))]

use std::path::Path;

use notify_types::event::{AccessKind, AccessMode, Event, EventKind, MetadataKind, ModifyKind};

/// An inventory or a lock: its content is what the scan judges by.
fn is_inventory_or_lock(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    smolsweep::scan::is_inventory_content(name) || name.ends_with(".lock")
}

/// Whether a file system event can change what a scan finds.
pub(crate) fn schedules_scan(ev: &Event) -> bool {
    match &ev.kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => {
            true
        }
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => true,
        // Content written (IN_MODIFY) or a file written and closed (IN_CLOSE_WRITE).
        EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any | ModifyKind::Other)
        | EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
            ev.paths.iter().any(|p| is_inventory_or_lock(p))
        }
        EventKind::Access(_) => false,
        EventKind::Any | EventKind::Other => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind, p: &Path) -> Event {
        Event::new(kind).add_path(p.to_path_buf())
    }

    #[test]
    fn content_writes_do_not_schedule_a_scan_unless_inventory_or_lock() {
        use notify_types::event::{AccessKind, AccessMode, CreateKind, DataChange, MetadataKind};
        use notify_types::event::{ModifyKind, RemoveKind, RenameMode};
        let disk = Path::new("/h/.local/state/celesto/disks/vm1.qcow2");
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(!schedules_scan(&ev(data, disk)));
        assert!(!schedules_scan(&ev(closed, disk)));
        assert!(!schedules_scan(&ev(
            EventKind::Access(AccessKind::Any),
            disk
        )));
        assert!(!schedules_scan(&ev(
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
            disk
        )));
        let db = Path::new("/h/.local/state/celesto/celesto.db");
        assert!(schedules_scan(&ev(data, db)));
        assert!(schedules_scan(&ev(data, &db.with_extension("db-wal"))));
        assert!(schedules_scan(&ev(
            closed,
            Path::new("/h/vms/.m.fork-operation.lock")
        )));
        assert!(schedules_scan(&ev(
            EventKind::Create(CreateKind::File),
            disk
        )));
        assert!(schedules_scan(&ev(
            EventKind::Remove(RemoveKind::Any),
            disk
        )));
        assert!(schedules_scan(&ev(
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
            disk
        )));
    }

    /// FSEvents reports one set of flags per path (`FSEvents.h`: `kFSEventStreamEventFlag…`,
    /// flags of changes close together coalesced into one set); notify 8's FSEvents backend
    /// (`translate_flags` in its `src/fsevent.rs`) turns each set into one event per flag, in
    /// the kinds written here by hand. Recorded from that source, not from a Mac.
    #[test]
    fn fsevents_flag_sets_as_notify_translates_them() {
        use notify_types::event::{CreateKind, DataChange, RemoveKind, RenameMode};
        let disk = Path::new("/Users/u/.local/state/celesto/disks/vm1.qcow2");
        let db = Path::new("/Users/u/Library/Caches/smolvm/server/smolvm.db");
        let wakes =
            |kinds: &[EventKind], p: &Path| kinds.iter().any(|k| schedules_scan(&ev(*k, p)));
        // ItemModified | ItemIsFile: a VM writing its disk wakes nothing; an inventory does.
        let modified = [EventKind::Modify(ModifyKind::Data(DataChange::Content))];
        assert!(!wakes(&modified, disk));
        assert!(wakes(&modified, db));
        // ItemCreated | ItemModified | ItemIsFile (created and written within one latency): the
        // creation wakes the scan.
        let created_and_written = [
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Content)),
        ];
        assert!(wakes(&created_and_written, disk));
        // ItemRemoved | ItemIsFile, ItemRenamed, ItemRemoved | ItemIsDir.
        assert!(wakes(&[EventKind::Remove(RemoveKind::File)], disk));
        assert!(wakes(
            &[EventKind::Modify(ModifyKind::Name(RenameMode::Any))],
            disk
        ));
        assert!(wakes(&[EventKind::Remove(RemoveKind::Folder)], disk));
        // ItemInodeMetaMod, ItemXattrMod, ItemChangeOwner: attributes count, as IN_ATTRIB does.
        assert!(wakes(
            &[EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any))],
            disk
        ));
        assert!(wakes(
            &[EventKind::Modify(ModifyKind::Metadata(
                MetadataKind::Extended
            ))],
            disk
        ));
        // MustScanSubDirs (events were dropped): notify's Other with its rescan flag.
        assert!(wakes(&[EventKind::Other], disk));
        // Unmount at the path (a `layers-cs` image detached): a removal.
        assert!(wakes(&[EventKind::Remove(RemoveKind::Other)], disk));
    }
}
