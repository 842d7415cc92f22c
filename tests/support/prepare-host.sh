#!/usr/bin/env bash
# prepare-host.sh SCENARIO_DIR OUT_DIR FAKE_NVML_SO FAKE_CUDA_SO
#
# Turns a fixture host (tests/fixtures/hosts/<scenario>/) into a host tree the doctor can
# be pointed at:
#   OUT_DIR/root           copy of SCENARIO_DIR/root, modes restored (git keeps only the x bit)
#   OUT_DIR/root/usr/lib/<multiarch>/libnvidia-ml.so.<driver>, libcuda.so.<driver>
#                          (or under libs.conf's `libdir = DIR`)
#                          the fake libraries under the names libs.conf gives, with the
#                          .so.1 symlinks (and libcuda.so -> libcuda.so.1); none when
#                          libs.conf says `driver = none`
#   OUT_DIR/root/etc/ld.so.cache   from `ldconfig -r OUT_DIR/root`
#   OUT_DIR/scenario.conf  the fake libraries' scenario (export PI_FAKE_GPU_SCENARIO=it)
# <multiarch> is aarch64-linux-gnu when root/etc/ld.so.conf.d/aarch64-linux-gnu.conf
# exists, x86_64-linux-gnu otherwise. Running it again gives the same tree (OUT_DIR/root
# is rebuilt from scratch). ldconfig -r chroots, so this needs root (or CAP_SYS_CHROOT).
set -euo pipefail

usage() {
  echo "usage: $0 SCENARIO_DIR OUT_DIR FAKE_NVML_SO FAKE_CUDA_SO" >&2
  exit 2
}
[[ $# -eq 4 ]] || usage
scenario=$1 out=$2 nvml_so=$3 cuda_so=$4

die() {
  echo "prepare-host: $*" >&2
  exit 1
}
[[ -d $scenario/root ]] || die "$scenario/root: not a directory"
[[ -f $scenario/scenario.conf ]] || die "$scenario/scenario.conf: missing"
[[ -f $scenario/libs.conf ]] || die "$scenario/libs.conf: missing"
[[ -n $out ]] || usage

# libs.conf: one line `driver = VERSION` or `driver = none` (a bare `none` works too).
driver=$(awk '{ sub(/#.*/, "") }
  /^[[:space:]]*driver[[:space:]]*=/ { sub(/^[^=]*=/, ""); gsub(/[[:space:]]/, ""); print; exit }
  /^[[:space:]]*none[[:space:]]*$/ { print "none"; exit }' "$scenario/libs.conf")
[[ -n $driver ]] || die "$scenario/libs.conf: no 'driver = VERSION' or 'none' line"
[[ $driver =~ ^(none|[0-9]+(\.[0-9]+)+)$ ]] || die "$scenario/libs.conf: bad driver version '$driver'"
# Optional `libdir = /ABSOLUTE/DIR`: where the libraries go instead of /usr/lib/<multiarch>
# (e.g. /usr/local/nvidia/lib64, where GKE mounts the driver); the tree's ld.so.conf must
# list it for ld.so.cache to hold them.
libdir_conf=$(awk '{ sub(/#.*/, "") }
  /^[[:space:]]*libdir[[:space:]]*=/ { sub(/^[^=]*=/, ""); gsub(/[[:space:]]/, ""); print; exit }' "$scenario/libs.conf")
[[ -z $libdir_conf || $libdir_conf =~ ^/[A-Za-z0-9._/-]+$ && $libdir_conf != *..* ]] ||
  die "$scenario/libs.conf: bad libdir '$libdir_conf' (an absolute path)"
if [[ $driver != none ]]; then
  [[ -f $nvml_so ]] || die "$nvml_so: no such file"
  [[ -f $cuda_so ]] || die "$cuda_so: no such file"
fi

command -v ldconfig >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
command -v ldconfig >/dev/null 2>&1 || die "ldconfig not found"

mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(cd "$scenario/root" && pwd)
[[ $out != / && $out/root != "$src" ]] || die "refusing OUT_DIR $out"

# Fresh copy every time, so a second run gives the same tree.
if [[ -e $out/root ]]; then
  chmod -R u+rwX "$out/root"
  rm -rf "$out/root"
fi
cp -a "$src" "$out/root"
root=$out/root

# Modes: git stores only the executable bit; make them what they are on a real host.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f -exec chmod 0644 {} +
for d in usr/bin usr/sbin usr/local/bin bin sbin; do
  if [[ -d $root/$d && ! -L $root/$d ]]; then
    find "$root/$d" -maxdepth 1 -type f -exec chmod 0755 {} +
  fi
done
if [[ -d $root/dev ]]; then
  find "$root/dev" -maxdepth 1 -type f -name 'nvidia*' -exec chmod 0666 {} +
  if [[ -d $root/dev/nvidia-caps ]]; then
    find "$root/dev/nvidia-caps" -type f -exec chmod 0400 {} +
  fi
fi

multiarch=x86_64-linux-gnu
if [[ -f $root/etc/ld.so.conf.d/aarch64-linux-gnu.conf ]]; then
  multiarch=aarch64-linux-gnu
fi
libdir=$root/usr/lib/$multiarch
[[ -z $libdir_conf ]] || libdir=$root$libdir_conf
mkdir -p "$libdir"

if [[ $driver != none ]]; then
  install -m 0755 "$nvml_so" "$libdir/libnvidia-ml.so.$driver"
  install -m 0755 "$cuda_so" "$libdir/libcuda.so.$driver"
  ln -sfn "libnvidia-ml.so.$driver" "$libdir/libnvidia-ml.so.1"
  ln -sfn "libcuda.so.$driver" "$libdir/libcuda.so.1"
  ln -sfn libcuda.so.1 "$libdir/libcuda.so"
fi

mkdir -p "$root/etc" "$root/var/cache/ldconfig"
[[ -f $root/etc/ld.so.conf ]] || printf '/usr/lib/%s\n' "$multiarch" >"$root/etc/ld.so.conf"
rm -f "$root/etc/ld.so.cache"
ldconfig -r "$root"
[[ -f $root/etc/ld.so.cache ]] || die "ldconfig -r $root made no etc/ld.so.cache"

install -m 0644 "$scenario/scenario.conf" "$out/scenario.conf"
