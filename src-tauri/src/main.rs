fn main() {
    smolsweep_desktop::run();
}
