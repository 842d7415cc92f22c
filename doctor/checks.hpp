#pragma once
// Host and image checks of `paddle-image doctor` (docs/doctor.md). Each check has a
// stable id and ends PASS, WARN, FAIL or SKIP with the evidence read and a fix.
#include "compat_matrix/facts.hpp"
#include "compat_matrix/matrix.hpp"
#include "doctor/host.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace doctor {

enum class Status { pass, warn, fail, skip };
std::string to_string(Status s);

struct CheckResult {
  std::string id;
  std::string title;
  Status status = Status::skip;
  std::string evidence;
  std::string fix;
  // Set when the check rests on a fact the image does not state, derived from the
  // compatibility matrix: names the rows. Such a check never PASSes.
  std::string derived_from;
};

struct Options {
  std::string nvml_lib; // override; empty: looked up under the root
  std::string cuda_lib;
  int timeout_ms = 10000;
};

// What an image needs from a host: from its config (labels, CUDA_VERSION,
// NVIDIA_REQUIRE_CUDA), from --requires, and (with --scan-layers) from its files.
// The stated facts are compat::ImageFacts, the type the build writes its labels from.
struct ImageNeeds : compat::ImageFacts {
  bool scanned = false;                  // layers were scanned
  std::vector<std::string> driver_files; // driver libraries/binaries shipped in the image
  std::vector<std::string> compat_libs;  // cuda-compat libcuda in the image
  bool compat_forced = false;            // ld.so.conf / LD_LIBRARY_PATH points at them
  std::string compat_evidence;
};

// A GPU as the NVML probe reports it.
struct ProbedGpu {
  std::string name;             // "GPU" when NVML gives none
  std::string cc;               // compute capability, "9.0"
  std::uint64_t memory_mib = 0; // NVML's total memory (what GFD labels nvidia.com/gpu.memory); 0: unknown
};

// What the host checks found that the image checks compare against.
struct HostProbes {
  std::optional<std::string> driver; // /proc/driver/nvidia/version, else NVML's
  int cuda_driver = 0;               // CUDA version the driver supports (12040 = 12.4); 0: unknown
  std::vector<ProbedGpu> gpus;       // NVML's GPUs that report a compute capability
};

// The probes from their JSON form in a report's facts ("driver", and the "nvml" and
// "cuda" probe outputs as check_host records them), for a report that exists only as
// JSON. Anything missing or of another type is unknown.
HostProbes host_probes_from_facts(const nlohmann::json& facts);

struct Report {
  std::vector<CheckResult> checks;
  nlohmann::json facts = nlohmann::json::object(); // the report's output form
  std::optional<HostProbes> probes;                // set by check_host
  int count(Status s) const;
};

Report check_host(const Host& host, const Options& options);
// Image checks against `host`.
void check_image(Report& report, const HostProbes& host, const ImageNeeds& needs, const compat::Matrix& matrix);
// Against report.probes; a report without them (assembled from JSON facts) has its
// probes read from the facts with host_probes_from_facts.
void check_image(Report& report, const ImageNeeds& needs, const compat::Matrix& matrix);
nlohmann::json to_json(const Report& r);

} // namespace doctor
