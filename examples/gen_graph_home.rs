//! Issue 37's benchmark layout: add to a HOME what the reference graph reads on a busy smolvm
//! desktop: `MACHINES` machine directories (two thirds with a record) whose `storage.qcow2` and
//! `overlay.qcow2` (made by the real `qemu-img`) back onto copy-on-write bases, half of them
//! leasing one of eight shared extractions (`.pack-shared`), every fifth a clone backing onto
//! an earlier machine's frozen layer, and a pause record beside every seventh.
//!
//! `cargo run --release --example gen_graph_home -- HOME [MACHINES]` (default 40). Prints what it
//! made. Uses the fixtures crate (records as smolvm 1.32.2 writes them).

use std::path::Path;

use smolsweep_fixtures::smolvm::Smolvm;
use smolsweep_fixtures::{age_tree, write, Home, Layout, OLD};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let home_dir = args.next().expect("usage: gen_graph_home HOME [MACHINES]");
    let machines: usize = args.next().map_or(40, |n| n.parse().expect("a number"));
    // `Home::new` makes `<dir>/home`: give it the HOME's parent.
    let home_path = Path::new(&home_dir);
    let parent = home_path.parent().expect("HOME has a parent");
    assert_eq!(home_path.file_name().and_then(|n| n.to_str()), Some("home"));
    let home = Home::new(parent, Layout::Linux)?;
    let v = Smolvm::new(&home)?;
    let mut packs = Vec::new();
    for k in 0..8u32 {
        let crc = format!("{:08x}", 0x9a00_0000 + k);
        let shared = v.shared(&crc)?;
        let bases = v.cow_base(&Smolvm::shared_digest(&crc))?;
        packs.push((shared, bases));
    }
    let mut layers = Vec::new();
    for i in 0..machines {
        let name = format!("bench-{i:03}");
        if i % 3 != 2 {
            v.record(&name, serde_json::json!({"state": "stopped"}))?;
        }
        let dir = v.vms_dir().join(Smolvm::hash(&name));
        write(&dir.join("name"), &name)?;
        let (shared, bases) = &packs[i % packs.len()];
        if i % 5 == 4 && !layers.is_empty() {
            let layer: &std::path::PathBuf = &layers[i % layers.len()];
            smolsweep_fixtures::celesto::qcow2_image(&dir.join("storage.qcow2"), layer, "qcow2")?;
        } else {
            smolsweep_fixtures::celesto::qcow2_image(
                &dir.join("storage.qcow2"),
                &bases.join("storage-20480/base.raw"),
                "raw",
            )?;
        }
        smolsweep_fixtures::celesto::qcow2_image(
            &dir.join("overlay.qcow2"),
            &bases.join("overlay-10240/base.raw"),
            "raw",
        )?;
        if i % 2 == 0 {
            write(&dir.join(".pack-shared"), format!("{}\n", shared.display()))?;
        }
        if i % 4 == 0 {
            let base = dir.join("d/1/base.raw");
            smolsweep_fixtures::sparse_file(&base, 64 << 20, 64 << 10, b"")?;
            let layer = dir.join("d/1/storage.base.qcow2");
            smolsweep_fixtures::celesto::qcow2_image(&layer, &base, "raw")?;
            layers.push(layer);
        }
        if i % 7 == 0 {
            v.pause_record(&name)?;
        }
    }
    age_tree(&home.root, OLD)?;
    println!(
        "{machines} machines ({} recorded), {} shared extractions with bases, {} frozen layers",
        machines - machines / 3,
        packs.len(),
        layers.len()
    );
    Ok(())
}
