# Homebrew formula for the CLI alone: the universal Mach-O (arm64 + x86_64) that
# `packaging/macos/build-macos.sh cli` links on Linux, packed as
# target/apple/macos/smolsweep-<version>-macos-universal.tar.gz (one file: `smolsweep`).
# `brew install smolsweep-cli`. The app (menu bar, notifications) is the cask, smolsweep.rb.
class SmolsweepCli < Formula
  desc "Finds and safely reclaims what SmolVM (Celesto and smol-machines) leaves behind"
  homepage "https://github.com/smolsweep/smolsweep"
  version "0.1.0"
  url "https://github.com/smolsweep/smolsweep/releases/download/v#{version}/smolsweep-#{version}-macos-universal.tar.gz"
  sha256 :no_check # replaced by the release job with the archive's SHA-256
  license any_of: ["MIT", "Apache-2.0"]

  conflicts_with cask: "smolsweep", because: "the app bundle links the same `smolsweep` command"

  def install
    bin.install "smolsweep"
  end

  test do
    assert_match "smolsweep", shell_output("#{bin}/smolsweep --version")
  end
end
