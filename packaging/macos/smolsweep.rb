# Homebrew cask for the macOS build (built and notarised on macOS, not in this repository's CI).
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
