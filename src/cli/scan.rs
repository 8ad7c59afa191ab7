//! `smolsweep scan`.

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Print one JSON object (schema smolsweep.scan/1) instead of the human report.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: ScanArgs) -> i32 {
    todo!("cli scan")
}
