//! macOS `ps` parser (placeholder).
pub fn ps_command() -> Vec<String> {
    todo!("procs: ps_command")
}
pub fn parse_ps_output(_text: &str) -> Vec<super::RawProcess> {
    todo!("procs: parse_ps_output")
}
