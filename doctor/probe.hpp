#pragma once
// NVML and the CUDA driver API, loaded with dlopen in a child process with a
// timeout: a hanging cuInit or a crashing driver cannot hang or kill the doctor.
#include <nlohmann/json.hpp>
#include <string>

namespace doctor {

// {"loaded": bool, "error": "...", "init": rc, "init_error": "...", "driver": "...",
//  "cuda_driver": 12040, "gpus": [{index, name, uuid, pci, minor, cc, memory_mib,
//  mig_current, mig_pending, mig_devices, max_mig_devices, persistence,
//  ecc_uncorrected, remapped_pending, remapped_failure, fabric_state}]}
// or {"timeout": true} / {"crashed": true, "signal": N}.
nlohmann::json probe_nvml(const std::string& library_path, int timeout_ms);
// {"loaded", "error", "driver_version": 12040, "init": rc, "init_name": "...",
//  "count": N, "devices": [{name, cc}]} or timeout/crashed.
nlohmann::json probe_cuda(const std::string& library_path, int timeout_ms);

} // namespace doctor
