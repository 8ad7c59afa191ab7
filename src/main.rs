fn main() {
    std::process::exit(smolsweep::cli::main());
}
