#!/usr/bin/env python3
"""Compares what `paddle-image doctor --json` read on a GPU host with what NVIDIA's own
tool says about the same host.

  compare_nvidia_smi.py DOCTOR.json SMI.xml FIELDS.csv [--json]

SMI.xml is `nvidia-smi -q -x`; FIELDS.csv holds `FIELD, INDEX, VALUE` lines, one
`nvidia-smi --query-gpu=index,FIELD --format=csv,noheader,nounits` per field (the
script in scripts/gpu/real-gpu.sh writes it; a field the tool does not know is
`FIELD, *, ERROR ...`). Every reading both sides have must agree; one that only one
side has is listed as such, not as a difference. Exit 0 when nothing differs, 1 when
something does, 2 on unreadable input.
"""
import json
import sys
import xml.etree.ElementTree as ET


def die(msg):
    print(f"compare_nvidia_smi.py: {msg}", file=sys.stderr)
    sys.exit(2)


def bus_id(s):
    """'00000000:18:00.0' and '0000:18:00.0' as (domain, bus, device, function)."""
    try:
        dom, bus, rest = s.strip().split(":")
        dev, fn = rest.split(".")
        return (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))
    except ValueError:
        return None


def cuda_int(s):
    """nvidia-smi's '13.0' as the driver API's 13000."""
    try:
        major, minor = s.strip().split(".")[:2]
        return int(major) * 1000 + int(minor) * 10
    except ValueError:
        return None


def enabled(s):
    s = s.strip().lower()
    return {"enabled": 1, "disabled": 0}.get(s)


def read_fields(path):
    fields = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = [p.strip() for p in line.rstrip("\n").split(",", 2)]
            if len(parts) != 3 or parts[1] == "*" or parts[2].startswith("ERROR"):
                continue
            value = parts[2]
            if value in ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]"):
                continue
            fields.setdefault(int(parts[1]), {})[parts[0]] = value
    return fields


def main(argv):
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    if len(args) != 3:
        die("usage: compare_nvidia_smi.py DOCTOR.json SMI.xml FIELDS.csv [--json]")
    try:
        with open(args[0], encoding="utf-8") as f:
            doctor = json.load(f)
        smi = ET.parse(args[1]).getroot()
        fields = read_fields(args[2])
    except (OSError, ValueError, ET.ParseError) as e:
        die(str(e))
    facts = doctor.get("facts", {})
    nvml = facts.get("nvml", {}) or {}
    cuda = facts.get("cuda", {}) or {}
    rows = []

    def row(what, ours, theirs, same=None):
        if ours is None or theirs is None:
            verdict = "only nvidia-smi" if ours is None and theirs is not None else \
                      "only doctor" if theirs is None and ours is not None else "neither"
        else:
            verdict = "same" if (same(ours, theirs) if same else ours == theirs) else "DIFFERS"
        rows.append({"reading": what, "doctor": ours, "nvidia-smi": theirs, "verdict": verdict})

    text = lambda el, path: (el.findtext(path) or "").strip() or None  # noqa: E731
    smi_driver = text(smi, "driver_version")
    row("driver version (NVML)", nvml.get("driver"), smi_driver)
    row("driver version (/proc/driver/nvidia/version)", facts.get("driver"), smi_driver)
    smi_cuda = cuda_int(text(smi, "cuda_version") or "")
    row("CUDA driver version (NVML)", nvml.get("cuda_driver"), smi_cuda)
    row("CUDA driver version (cuDriverGetVersion)", cuda.get("driver_version"), smi_cuda)
    smi_gpus = smi.findall("gpu")
    attached = text(smi, "attached_gpus")
    row("GPU count (NVML)", len(nvml["gpus"]) if "gpus" in nvml else None, int(attached) if attached else None)
    row("GPU count (cuDeviceGetCount)", cuda.get("count"), int(attached) if attached else None)
    for i, g in enumerate(smi_gpus):
        ours = (nvml.get("gpus") or [])[i] if i < len(nvml.get("gpus") or []) else {}
        dev = (cuda.get("devices") or [])[i] if i < len(cuda.get("devices") or []) else {}
        f = fields.get(i, {})
        p = f"GPU {i} "
        row(p + "name (NVML)", ours.get("name"), text(g, "product_name"))
        row(p + "name (cuDeviceGetName)", dev.get("name"), text(g, "product_name"))
        row(p + "UUID", ours.get("uuid"), text(g, "uuid"))
        row(p + "PCI bus id", ours.get("pci"), g.get("id"), lambda a, b: bus_id(a) == bus_id(b))
        minor = text(g, "minor_number")
        row(p + "minor number", ours.get("minor"), int(minor) if minor and minor.isdigit() else None)
        row(p + "compute capability (NVML)", ours.get("cc"), f.get("compute_cap"))
        row(p + "compute capability (cuDeviceGetAttribute)", dev.get("cc"), f.get("compute_cap"))
        total = text(g, "fb_memory_usage/total")
        row(p + "memory MiB", ours.get("memory_mib"),
            int(total.split()[0]) if total and total.split()[0].isdigit() else None)
        mig = text(g, "mig_mode/current_mig")
        row(p + "MIG mode (current)", ours.get("mig_current"), enabled(mig) if mig else None)
        pend = text(g, "mig_mode/pending_mig")
        row(p + "MIG mode (pending)", ours.get("mig_pending"), enabled(pend) if pend else None)
        pm = text(g, "persistence_mode")
        row(p + "persistence mode", ours.get("persistence"), enabled(pm) if pm else None)
        ecc = f.get("ecc.errors.uncorrected.aggregate.total")
        row(p + "uncorrected ECC errors (aggregate)", ours.get("ecc_uncorrected"),
            int(ecc) if ecc and ecc.isdigit() else None)
        remap = text(g, "remapped_rows/pending")
        if remap is not None:
            row(p + "row remapping pending", ours.get("remapped_pending"),
                {"yes": 1, "no": 0}.get(remap.lower()))
    differs = [r for r in rows if r["verdict"] == "DIFFERS"]
    if as_json:
        print(json.dumps({"rows": rows, "differs": len(differs)}, indent=2))
    else:
        width = max(len(r["reading"]) for r in rows)
        for r in rows:
            print(f"{r['reading']:<{width}}  {str(r['doctor']):<28} {str(r['nvidia-smi']):<28} {r['verdict']}")
        print(f"{len(rows)} readings, {len(differs)} differ")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
