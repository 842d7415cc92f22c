#!/usr/bin/env bash
# Runs on a machine with a real NVIDIA GPU, from a bundle made by scripts/gpu/bundle.sh
# (cd into it first): NVIDIA's own readings (nvidia-smi -q -x, --query-gpu per field),
# `paddle-image doctor --json` and `doctor --image` for each test image against the
# verdicts written down beforehand (expected.tsv), the comparison of every probe
# reading with nvidia-smi's, and the host's driver files as a tree (host.tar.gz) to
# replay as a fixture. Read only: it changes nothing on the machine.
#   OUT=DIR bash real-gpu.sh
# Dry run on a machine without a GPU: ROOT=fixture-root NVIDIA_SMI=fake-smi plus the
# fake libraries through PI_FAKE_GPU_SCENARIO (tests/support/fakegpu).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
ROOT=${ROOT:-/}
SMI=${NVIDIA_SMI:-$(command -v nvidia-smi || echo /usr/local/nvidia/bin/nvidia-smi)}
BUNDLE=$(pwd)
mkdir -p "$OUT"
LOG="$OUT/report.txt"
exec > >(tee "$LOG") 2>&1
say() { printf '\n== %s\n' "$*"; }

say "machine"
uname -a
grep -E '^(PRETTY_NAME|VERSION_ID)=' "$ROOT/etc/os-release" 2>/dev/null
ldd --version 2>&1 | head -1
echo "binary needs up to: $(cat glibc-needed.txt 2>/dev/null)"
id
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
env | grep -E '^(NVIDIA_|CUDA_)' | sort

# The binary: with the bundled libraries on the machine's own glibc, else through the
# bundled loader and glibc.
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PI=("$BUNDLE/bin/paddle-image")
if ! "${PI[@]}" --version >/dev/null 2>"$OUT/pi-err.txt"; then
  echo "native run failed: $(head -3 "$OUT/pi-err.txt"); using the bundled glibc"
  PI=("$BUNDLE/glibc/ld-linux-x86-64.so.2" --library-path "$BUNDLE/lib:$BUNDLE/glibc" "$BUNDLE/bin/paddle-image")
fi
rm -f "$OUT/pi-err.txt"
"${PI[@]}" --version

say "nvidia-smi"
"$SMI" -q -x >"$OUT/smi.xml" 2>&1
echo "nvidia-smi -q -x: exit $?"
"$SMI" --version 2>&1 | head -5
"$SMI" 2>&1 | head -20
: >"$OUT/smi-fields.csv"
for f in name uuid pci.bus_id driver_version compute_cap memory.total mig.mode.current mig.mode.pending \
  persistence_mode ecc.mode.current ecc.errors.uncorrected.aggregate.total ecc.errors.uncorrected.volatile.total \
  retired_pages.pending remapped_rows.pending remapped_rows.failure vbios_version serial \
  power.limit clocks.max.sm; do
  if r=$("$SMI" --query-gpu="index,$f" --format=csv,noheader,nounits 2>&1); then
    sed "s/^\([0-9]*\), /$f, \1, /" <<<"$r" >>"$OUT/smi-fields.csv"
  else
    echo "$f, *, ERROR $(head -1 <<<"$r")" >>"$OUT/smi-fields.csv"
  fi
done
cat "$OUT/smi-fields.csv"

say "host files the doctor reads"
H=$(mktemp -d)/root
mkdir -p "$H"
keep() { # copy a host file into the tree (proc files read with cat: their size is 0)
  local src="$ROOT/$1"
  [[ -f "$src" && -r "$src" ]] || return 0
  mkdir -p "$H$(dirname "$1")"
  cat "$src" >"$H$1" 2>/dev/null || rm -f "$H$1"
}
for f in /proc/version /proc/modules /proc/devices /proc/1/comm /sys/module/nvidia/version \
  /etc/os-release /etc/ld.so.conf /etc/ld.so.cache /etc/docker/daemon.json /etc/containerd/config.toml \
  /etc/nvidia-container-runtime/config.toml /var/log/kern.log; do keep "$f"; done
for d in /proc/driver/nvidia /proc/driver/nvidia-caps /etc/ld.so.conf.d /etc/cdi /var/run/cdi /etc/containerd/conf.d \
  /sys/module/nvidia_uvm /sys/module/nvidia_modeset; do
  [[ -d "$ROOT$d" ]] || continue
  while IFS= read -r f; do keep "${f#"$ROOT"}"; done < <(find "$ROOT$d" -maxdepth 4 -type f -name '[a-z]*' 2>/dev/null | head -200)
done
for p in /proc/driver/nvidia /proc/modules /proc/devices /sys/module/nvidia /dev/nvidiactl /dev/nvidia-uvm; do
  [[ -e "$ROOT$p" ]] && echo "present: $p" || echo "absent:  $p"
done
echo "-- device nodes (name type major:minor mode owner)"
for n in "$ROOT"/dev/nvidia* "$ROOT"/dev/nvidia-caps/* "$ROOT"/dev/dri/*; do
  [[ -e "$n" ]] && stat -c '%n %F %t:%T %a %U:%G' "$n" | sed 's/character special file/char/'
done | tee "$H/dev-nodes.txt"
echo "-- driver libraries"
find "$ROOT/usr/local/nvidia" "$ROOT/usr/lib" "$ROOT/usr/lib64" "$ROOT/lib" "$ROOT/usr/local/cuda"* -maxdepth 4 \
  \( -name 'libcuda.so*' -o -name 'libnvidia-ml.so*' -o -name 'nvidia-smi' \) -printf '%p %y %l %s\n' 2>/dev/null |
  sort | tee "$H/driver-files.txt"
ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvidia-ml\.so' | tee "$H/ldconfig-p.txt"
find "$ROOT/usr/local/nvidia" -maxdepth 2 -printf '%p %y %m %l\n' 2>/dev/null | sort | head -80 >"$H/usr-local-nvidia.txt"
mount 2>/dev/null | grep -Ei 'nvidia|/dev ' | head -20 | tee "$H/mounts.txt"
tar -C "$(dirname "$H")" -czf "$OUT/host.tar.gz" root
tar -tzf "$OUT/host.tar.gz" | wc -l | sed 's/$/ files in host.tar.gz/'

say "paddle-image doctor (host)"
"${PI[@]}" doctor --root "$ROOT" --timeout 60 --json >"$OUT/doctor.json"
echo "doctor --json: exit $?"
"${PI[@]}" doctor --root "$ROOT" --timeout 60
echo "doctor: exit $?"

say "paddle-image doctor --image, against the verdicts written beforehand"
: >"$OUT/images.jsonl"
bad=0
declare -A done_tag
while IFS=$'\t' read -r tag requires check expect; do
  [[ -z "$tag" || "$tag" == \#* ]] && continue
  if [[ -z "${done_tag[$tag]:-}" ]]; then
    "${PI[@]}" doctor --root "$ROOT" --timeout 60 --image "oci:$BUNDLE/images:$tag" --json >"$OUT/img-$tag.json"
    jq_line=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({"tag": sys.argv[2], "report": d}))' \
      "$OUT/img-$tag.json" "$tag" 2>&1) && echo "$jq_line" >>"$OUT/images.jsonl"
    done_tag[$tag]=1
  fi
  got=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
c=[x for x in d["checks"] if x["id"]==sys.argv[2]]
print((c[0]["status"].upper()+"\t"+c[0]["evidence"]) if c else "ABSENT\t")' "$OUT/img-$tag.json" "$check" 2>&1)
  if [[ "${got%%$'\t'*}" == "$expect" ]]; then
    printf 'as expected  %-16s %-18s %-5s %s\n' "$tag" "$check" "$expect" "${got#*$'\t'}"
  else
    printf 'UNEXPECTED   %-16s %-18s expected %s, got %s\n' "$tag" "$check" "$expect" "$got"
    bad=$((bad + 1))
  fi
done <expected.tsv
rm -f "$OUT"/img-*.json
echo "$bad verdict(s) differ from expected.tsv"

say "doctor's readings against nvidia-smi's"
python3 compare_nvidia_smi.py "$OUT/doctor.json" "$OUT/smi.xml" "$OUT/smi-fields.csv" | tee "$OUT/compare.txt"
echo "compare: exit ${PIPESTATUS[0]}"
