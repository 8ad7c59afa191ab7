# A real QEMU-backed Celesto sandbox, offline (celesto-smolvm.md §12.6), for tests/it/real_vm.rs.
# Sourced by scripts/test.sh (bash, `set -euo pipefail` active); idempotent, apt only.
#
#   $SMOLSWEEP_REPO/.tools/qemu-vm/kernel/vmlinuz-<abi>-amd64   from Debian's linux-image-<abi>-amd64
#                                                              (apt-get download + dpkg-deb -x)
#   $SMOLSWEEP_REPO/.tools/qemu-vm/initramfs-v1.cpio.gz        busybox-static's busybox; /init says
#                                                              "smolsweep-guest-up" on the console, then sleeps
#   $SMOLSWEEP_REPO/.tools/qemu-vm/bin/qemu-system-x86_64      the §12.6 nested-virtualization shim
#                                                              (Celesto looks QEMU up on PATH)
#   $SMOLSWEEP_REPO/.tools/qemu-vm/qemu-root/                  Debian qemu-system-x86, extracted, only when
#                                                              installing it would remove a package (below)
#
# QEMU: a qemu-system-x86_64 already on PATH is used as is. Otherwise `apt-get install
# qemu-system-x86`, as in §12.6, unless apt would remove something to do it: on a host with the
# backports qemu-utils 10.0 (Debian's qemu-system-x86 7.2 Breaks it, see the §12.6 caveat) the
# same Debian packages are downloaded and extracted under .tools instead, so qemu-img 10 stays.
#
# Accelerator: KVM when a probe boot of this kernel reaches /init under KVM within 10 s; TCG
# otherwise (no /dev/kvm, or a /dev/kvm that cannot run a stock kernel, such as a PVM host). The
# result is cached per host kernel, guest kernel and QEMU. Under TCG the shim runs `-machine
# ...,accel=tcg`, `-cpu max` and gives the guest its TSC frequency (`tsc_early_khz`), which
# microvm needs with no PIT or HPET to calibrate against.
#
# Exports SMOLSWEEP_QEMU_KERNEL, SMOLSWEEP_QEMU_INITRD, SMOLSWEEP_QEMU_BIN_DIR (put it first on
# PATH) and SMOLSWEEP_QEMU_ACCEL (kvm or tcg).
_sq_dir="${SMOLSWEEP_REPO:?SMOLSWEEP_REPO must be set}/.tools/qemu-vm"
_sq_sudo=""
[ "$(id -u)" -ne 0 ] && _sq_sudo="sudo"
mkdir -p "$_sq_dir/bin" "$_sq_dir/kernel"

_sq_apt_lists() {
  # apt-get download needs package lists; update once when the candidate is unknown.
  if ! apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    $_sq_sudo apt-get update -q >/dev/null
  fi
}

# Download Debian packages (exact versions) into a fresh directory and extract each into $1.
_sq_download_extract() {
  local dest=$1; shift
  local dl="$_sq_dir/debs"
  rm -rf "$dl" && mkdir -p "$dl"
  # As root, apt warns that it cannot drop to _apt for a download here; harmless.
  (cd "$dl" && apt-get download -q "$@" >/dev/null 2>&1) \
    || { echo "qemu-vm: apt-get download $* failed" >&2; return 1; }
  mkdir -p "$dest"
  local deb
  for deb in "$dl"/*.deb; do dpkg-deb -x "$deb" "$dest"; done
  rm -rf "$dl"
}

# --- QEMU -------------------------------------------------------------------------------------
_sq_root="$_sq_dir/qemu-root"
_sq_real=""
if [ -f "$_sq_root/.complete" ]; then
  _sq_real="$_sq_root/usr/bin/qemu-system-x86_64"
elif [ -x /usr/bin/qemu-system-x86_64 ]; then
  _sq_real=/usr/bin/qemu-system-x86_64
else
  _sq_apt_lists qemu-system-x86
  # What `apt-get install qemu-system-x86` would do, without doing it.
  _sq_sim=$(apt-get install -s -q --no-install-recommends qemu-system-x86 2>/dev/null || true)
  if [ -n "$_sq_sim" ] && ! printf '%s\n' "$_sq_sim" | grep -q '^Remv '; then
    echo "qemu-vm: apt-get install qemu-system-x86"
    DEBIAN_FRONTEND=noninteractive $_sq_sudo apt-get install -y -q --no-install-recommends \
      qemu-system-x86 >/dev/null
    _sq_real=/usr/bin/qemu-system-x86_64
  else
    # "Inst <pkg> [<old version>] (<version> <release> [<arch>])": every package apt would add.
    _sq_pkgs=$(printf '%s\n' "$_sq_sim" \
      | awk '/^Inst /{ for (i = 3; i <= NF; i++) if ($i ~ /^\(/) { print $2 "=" substr($i, 2); break } }')
    [ -n "$_sq_pkgs" ] || { echo "qemu-vm: apt cannot resolve qemu-system-x86" >&2; return 1; }
    echo "qemu-vm: installing qemu-system-x86 would remove $(printf '%s\n' "$_sq_sim" | awk '/^Remv /{print $2}' | tr '\n' ' ')- extracting it under $_sq_root instead"
    rm -rf "$_sq_root"
    # shellcheck disable=SC2086
    _sq_download_extract "$_sq_root" $_sq_pkgs
    touch "$_sq_root/.complete"
    _sq_real="$_sq_root/usr/bin/qemu-system-x86_64"
  fi
fi
_sq_env=""
if [ "$_sq_real" = "$_sq_root/usr/bin/qemu-system-x86_64" ]; then
  _sq_env="export LD_LIBRARY_PATH=\"$_sq_root/usr/lib/x86_64-linux-gnu:$_sq_root/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\"
export QEMU_MODULE_DIR=\"$_sq_root/usr/lib/x86_64-linux-gnu/qemu\"
extra=(-L \"$_sq_root/usr/share/qemu\" -L \"$_sq_root/usr/share/seabios\" -L \"$_sq_root/usr/lib/ipxe/qemu\")"
fi

# --- kernel (vmlinuz only) and busybox -------------------------------------------------------
_sq_kernel=$(ls "$_sq_dir"/kernel/vmlinuz-*-amd64 2>/dev/null | head -n 1 || true)
if [ -z "$_sq_kernel" ] || [ ! -f "$_sq_dir/kernel/.complete" ]; then
  _sq_apt_lists linux-image-amd64
  # The ABI number changes with point releases: ask the metapackage.
  _sq_kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null \
    | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$_sq_kpkg" ] || { echo "qemu-vm: no linux-image-<abi>-amd64 behind linux-image-amd64" >&2; return 1; }
  echo "qemu-vm: extracting the kernel of $_sq_kpkg"
  rm -rf "$_sq_dir/kernel" "$_sq_dir/kernel.x"
  _sq_download_extract "$_sq_dir/kernel.x" "$_sq_kpkg"
  mkdir -p "$_sq_dir/kernel"
  mv "$_sq_dir"/kernel.x/boot/vmlinuz-*-amd64 "$_sq_dir/kernel/"
  rm -rf "$_sq_dir/kernel.x"   # the modules are not needed: the guest runs from its initramfs
  touch "$_sq_dir/kernel/.complete"
  _sq_kernel=$(ls "$_sq_dir"/kernel/vmlinuz-*-amd64 | head -n 1)
fi

_sq_initrd="$_sq_dir/initramfs-v1.cpio.gz"
if [ ! -f "$_sq_initrd" ]; then
  if [ ! -x "$_sq_dir/busybox" ]; then
    _sq_apt_lists busybox-static
    echo "qemu-vm: extracting busybox-static"
    rm -rf "$_sq_dir/bb"
    _sq_download_extract "$_sq_dir/bb" busybox-static
    mv "$_sq_dir/bb/bin/busybox" "$_sq_dir/busybox"
    rm -rf "$_sq_dir/bb"
  fi
  # Initramfs whose /init sleeps (busybox's own cpio, gzip). It mounts devtmpfs first so that
  # it has a console to say it is up on (the console log is how the test sees the guest boot).
  _sq_ir="$_sq_dir/ir"
  rm -rf "$_sq_ir" && mkdir -p "$_sq_ir/bin" "$_sq_ir/dev" "$_sq_ir/proc" "$_sq_ir/sys"
  cp "$_sq_dir/busybox" "$_sq_ir/bin/busybox" && ln -s busybox "$_sq_ir/bin/sh"
  printf '%s\n' '#!/bin/sh' \
    '/bin/busybox mount -t devtmpfs devtmpfs /dev' \
    'exec >/dev/console 2>&1 </dev/null' \
    'echo smolsweep-guest-up' \
    'exec /bin/busybox sleep 100000' > "$_sq_ir/init"
  chmod +x "$_sq_ir/init"
  (cd "$_sq_ir" && find . | "$_sq_dir/busybox" cpio -o -H newc 2>/dev/null) | gzip -9 > "$_sq_initrd.part"
  mv "$_sq_initrd.part" "$_sq_initrd"
  rm -rf "$_sq_ir"
fi

# --- the shim ----------------------------------------------------------------------------------
# §12.6: rewrites `-cpu host` to `-cpu host,-arch-capabilities` (QEMU 7.2 under nested KVM can
# abort with "failed to set MSR 0x10a"); under TCG see the header. It execs, so the running
# process's command line is QEMU's own, `-drive file=<disk>` included.
_sq_shim="$_sq_dir/bin/qemu-system-x86_64"
_sq_write_shim() {
  cat > "$_sq_shim.part" <<EOF
#!/bin/bash
# Generated by scripts/setup/30-qemu-vm.sh.
accel=\${SMOLSWEEP_QEMU_ACCEL:-$1}
extra=()
$_sq_env
khz=\$(awk -F: '/^cpu MHz/{printf "%d", \$2 * 1000; exit}' /proc/cpuinfo 2>/dev/null)
args=(); prev=
for a in "\$@"; do
  if [ "\$accel" = tcg ]; then
    case "\$prev" in
      -cpu) a=max ;;
      -machine|-M) a=\${a//accel=kvm/accel=tcg} ;;
      -accel) [ "\$a" = kvm ] && a=tcg ;;
      -append) a="\$a tsc_early_khz=\${khz:-2000000}" ;;
    esac
    [ "\$a" = -enable-kvm ] && { prev=\$a; continue; }
  elif [ "\$prev" = -cpu ]; then
    case "\$a" in
      host)   a="host,-arch-capabilities" ;;
      host,*) a="host,-arch-capabilities,\${a#host,}" ;;
    esac
  fi
  args+=("\$a"); prev="\$a"
done
exec "$_sq_real" "\${args[@]}" "\${extra[@]}"
EOF
  chmod +x "$_sq_shim.part"
  mv "$_sq_shim.part" "$_sq_shim"
}

# Boot the guest with one accelerator; succeed when /init reports within $2 seconds.
_sq_probe() {
  local log="$_sq_dir/probe-$1.log" pid i
  SMOLSWEEP_QEMU_ACCEL=$1 "$_sq_shim" -smp 1 -m 128 -nodefaults -serial stdio \
    -kernel "$_sq_kernel" -append "console=ttyS0 reboot=k panic=1 rdinit=/init" \
    -initrd "$_sq_initrd" -nographic -no-reboot -monitor none \
    -machine microvm,accel=kvm,acpi=on,pcie=off,pic=off,pit=off,rtc=on -cpu host \
    </dev/null >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < $2 * 10; i++)); do
    grep -aqs smolsweep-guest-up "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -aq smolsweep-guest-up "$log"
}

_sq_write_shim tcg
_sq_version=$("$_sq_shim" --version 2>/dev/null | head -n 1 || true)
case "$_sq_version" in
  "QEMU emulator version "[6-9].*|"QEMU emulator version "[1-9][0-9].*) ;;
  *) echo "qemu-vm: $_sq_real is not QEMU >= 6.0: '$_sq_version'" >&2; return 1 ;;
esac
_sq_key="$(uname -r) $(basename "$_sq_kernel") $_sq_version"
_sq_accel=""
if [ -f "$_sq_dir/accel" ] && [ "$(sed -n 1p "$_sq_dir/accel")" = "$_sq_key" ]; then
  _sq_accel=$(sed -n 2p "$_sq_dir/accel")
fi
if [ "$_sq_accel" != kvm ] && [ "$_sq_accel" != tcg ]; then
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && _sq_probe kvm 10; then
    _sq_accel=kvm
  elif _sq_probe tcg 90; then
    _sq_accel=tcg
    echo "qemu-vm: KVM cannot boot the guest here (see $_sq_dir/probe-kvm.log); using TCG"
  else
    echo "qemu-vm: the guest boots neither under KVM nor TCG; see $_sq_dir/probe-*.log" >&2
    return 1
  fi
  printf '%s\n%s\n' "$_sq_key" "$_sq_accel" > "$_sq_dir/accel"
fi
_sq_write_shim "$_sq_accel"
echo "qemu-vm: $_sq_version ($_sq_accel), $(basename "$_sq_kernel") ready"

export SMOLSWEEP_QEMU_KERNEL="$_sq_kernel"
export SMOLSWEEP_QEMU_INITRD="$_sq_initrd"
export SMOLSWEEP_QEMU_BIN_DIR="$_sq_dir/bin"
export SMOLSWEEP_QEMU_ACCEL="$_sq_accel"
unset -f _sq_apt_lists _sq_download_extract _sq_write_shim _sq_probe
unset _sq_dir _sq_sudo _sq_root _sq_real _sq_sim _sq_pkgs _sq_env _sq_kernel _sq_kpkg _sq_initrd \
  _sq_ir _sq_shim _sq_version _sq_key _sq_accel
