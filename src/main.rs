//! The `smolsweep` command line: parses flags (clap) and calls the library.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
