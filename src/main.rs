fn main() {
    std::process::exit(smolsweep_cli::run());
}
mod smolsweep_cli {
    pub fn run() -> i32 {
        0
    }
}
