//! Linux process table (placeholder).
pub fn list_processes() -> Vec<super::RawProcess> {
    todo!("procs: linux")
}
