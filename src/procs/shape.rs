//! VMM shapes (placeholder until the process scanner lands).

use std::path::PathBuf;

use super::RawProcess;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmmShape {
    SmolvmBootVm {
        boot_config: PathBuf,
        vm_dir: PathBuf,
    },
    SmolvmForked,
    CelestoQemu {
        drives: Vec<PathBuf>,
        qmp_socket: Option<PathBuf>,
        sandbox_id: Option<String>,
    },
    CelestoFirecracker {
        api_sock: PathBuf,
        sandbox_id: Option<String>,
    },
    CelestoLibkrun {
        config: PathBuf,
        sandbox_id: Option<String>,
    },
}

impl VmmShape {
    pub fn shape_name(&self) -> &'static str {
        match self {
            VmmShape::SmolvmBootVm { .. } => "smolvm.boot_vm",
            VmmShape::SmolvmForked => "smolvm.forked",
            VmmShape::CelestoQemu { .. } => "celesto.qemu",
            VmmShape::CelestoFirecracker { .. } => "celesto.firecracker",
            VmmShape::CelestoLibkrun { .. } => "celesto.libkrun",
        }
    }
}

pub fn detect_shape(_p: &RawProcess) -> Option<VmmShape> {
    todo!("procs: detect_shape")
}
