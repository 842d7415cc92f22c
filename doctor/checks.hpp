#pragma once
// Host and image checks of `paddle-image doctor` (docs/doctor.md). Each check has a
// stable id and ends PASS, WARN, FAIL or SKIP with the evidence read and a fix.
#include "compat_matrix/matrix.hpp"
#include "doctor/host.hpp"

#include <nlohmann/json.hpp>
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
struct ImageNeeds {
  std::string source;     // "oci:out:v1", "--requires"
  std::string cuda;       // "12.6"
  std::string driver_min; // full compatibility
  std::string driver_min_compat;
  std::string require_cuda;       // NVIDIA_REQUIRE_CUDA floor
  std::vector<std::string> archs; // "sm_80"
  std::string paddle;
  bool scanned = false;                  // layers were scanned
  std::vector<std::string> driver_files; // driver libraries/binaries shipped in the image
  std::vector<std::string> compat_libs;  // cuda-compat libcuda in the image
  bool compat_forced = false;            // ld.so.conf / LD_LIBRARY_PATH points at them
  std::string compat_evidence;
};

struct Report {
  std::vector<CheckResult> checks;
  nlohmann::json facts = nlohmann::json::object();
  int count(Status s) const;
};

Report check_host(const Host& host, const Options& options);
void check_image(Report& report, const ImageNeeds& needs, const compat::Matrix& matrix);
nlohmann::json to_json(const Report& r);

} // namespace doctor
