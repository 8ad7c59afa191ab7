# Homebrew cask for the macOS app: Smolsweep_<version>_universal.dmg, which
# `packaging/macos/build-macos.sh app` builds on a Mac (Apple's SDK; notarised there). The CLI
# in it is built for both architectures by the same script (`build-macos.sh cli` links it on Linux).
# The CLI alone: smolsweep-cli.rb.
# `brew install --cask smolsweep`
cask "smolsweep" do
  version "0.1.0"
  sha256 :no_check # replaced by the release job with the DMG's SHA-256

  url "https://github.com/smolsweep/smolsweep/releases/download/v#{version}/Smolsweep_#{version}_universal.dmg"
  name "Smolsweep"
  desc "Menu-bar app that finds and safely reclaims what SmolVM leaves behind"
  homepage "https://github.com/smolsweep/smolsweep"

  depends_on macos: ">= :big_sur"

  app "Smolsweep.app"
  # The CLI ships inside the bundle (bundle.externalBin in tauri.macos.conf.json).
  binary "#{appdir}/Smolsweep.app/Contents/MacOS/smolsweep"

  uninstall quit:       "dev.smolsweep.desktop",
            launchctl:  "dev.smolsweep.desktop"

  zap trash: [
    "~/Library/Application Support/dev.smolsweep.desktop",
    "~/Library/Caches/dev.smolsweep.desktop",
    "~/Library/LaunchAgents/Smolsweep.plist",
    "~/Library/Preferences/dev.smolsweep.desktop.plist",
    "~/Library/WebKit/dev.smolsweep.desktop",
  ]
end
