# Real upstream CLIs for the real-CLI tests (sourced by scripts/test.sh; idempotent).
#
#   $SMOLSWEEP_REPO/.tools/celesto-venv   python venv with celesto==0.1.10 (PyPI)
#   $SMOLSWEEP_REPO/.tools/smolmachines   the smolmachines 1.32.2 wheel, unpacked (smol/smol-vmm ...)
#
#   $SMOLSWEEP_REPO/.tools/smolmachines-*/agent-rootfs   its agent rootfs, extracted once
#
# Exports SMOLSWEEP_CELESTO_BIN and SMOLSWEEP_SMOL_WHEEL. Needs only PyPI and apt.
_st_tools="${SMOLSWEEP_REPO:?SMOLSWEEP_REPO must be set}/.tools"
_st_celesto_version=0.1.10
_st_smol_version=1.32.2
mkdir -p "$_st_tools"

# Host tools: apt only when something is missing.
_st_missing=()
command -v python3 >/dev/null 2>&1 || _st_missing+=(python3 python3-venv)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || _st_missing+=(python3-venv)
command -v zstd >/dev/null 2>&1 || _st_missing+=(zstd)
command -v qemu-img >/dev/null 2>&1 || _st_missing+=(qemu-utils)
command -v sqlite3 >/dev/null 2>&1 || _st_missing+=(sqlite3)
command -v ps >/dev/null 2>&1 || _st_missing+=(procps)
if [ "${#_st_missing[@]}" -gt 0 ]; then
  echo "real-tools: apt-get install ${_st_missing[*]}"
  _st_sudo=""
  [ "$(id -u)" -ne 0 ] && _st_sudo="sudo"
  $_st_sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $_st_sudo apt-get install -y -q "${_st_missing[@]}" >/dev/null
fi

# Celesto CLI in its own venv.
_st_venv="$_st_tools/celesto-venv"
if ! "$_st_venv/bin/celesto" --version 2>/dev/null | grep -qx "celesto $_st_celesto_version"; then
  echo "real-tools: installing celesto==$_st_celesto_version into $_st_venv"
  rm -rf "$_st_venv"
  python3 -m venv "$_st_venv"
  "$_st_venv/bin/python" -m pip install -q "celesto==$_st_celesto_version"
  "$_st_venv/bin/celesto" --version | grep -qx "celesto $_st_celesto_version" \
    || { echo "real-tools: celesto --version is not $_st_celesto_version" >&2; return 1; }
fi
echo "real-tools: celesto $_st_celesto_version ready"
export SMOLSWEEP_CELESTO_BIN="$_st_venv/bin/celesto"

# smol-machines smolvm CLI from the smolmachines wheel (unpacked, not installed).
_st_wheel_root="$_st_tools/smolmachines-$_st_smol_version"
if [ ! -x "$_st_wheel_root/smol/smol-vmm" ] || [ ! -f "$_st_wheel_root/.complete" ]; then
  echo "real-tools: downloading smolmachines==$_st_smol_version"
  rm -rf "$_st_wheel_root" "$_st_tools/wheels"
  python3 -m pip download -q --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 \
    -d "$_st_tools/wheels" "smolmachines==$_st_smol_version"
  _st_whl=$(ls "$_st_tools"/wheels/smolmachines-"$_st_smol_version"-*.whl | head -n 1)
  mkdir -p "$_st_wheel_root"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$_st_whl" "$_st_wheel_root"
  chmod +x "$_st_wheel_root/smol/smol-vmm"
  rm -rf "$_st_tools/wheels"
  touch "$_st_wheel_root/.complete"
fi
export SMOLSWEEP_SMOL_WHEEL="$_st_wheel_root/smol"
# The agent rootfs, extracted once; tests hard-link it into their scratch HOMEs.
if [ ! -f "$_st_wheel_root/agent-rootfs/.complete" ]; then
  echo "real-tools: extracting the agent rootfs"
  rm -rf "$_st_wheel_root/agent-rootfs"
  mkdir -p "$_st_wheel_root/agent-rootfs"
  tar --zstd -xf "$SMOLSWEEP_SMOL_WHEEL/agent-rootfs.tar.zst" -C "$_st_wheel_root/agent-rootfs"
  touch "$_st_wheel_root/agent-rootfs/.complete"
fi
"$SMOLSWEEP_SMOL_WHEEL/smol-vmm" --version 2>/dev/null | grep -qx "smolvm $_st_smol_version" \
  || { echo "real-tools: smol-vmm --version is not $_st_smol_version" >&2; return 1; }
echo "real-tools: smolvm $_st_smol_version ready ($SMOLSWEEP_SMOL_WHEEL)"
unset _st_tools _st_celesto_version _st_smol_version _st_missing _st_sudo _st_venv _st_wheel_root _st_whl
