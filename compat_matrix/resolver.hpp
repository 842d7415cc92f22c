#pragma once
// Picks published Paddle GPU images for a fleet (docs/resolve.md). Never invents a
// tag: every candidate is a row of the matrix.
#include "compat_matrix/matrix.hpp"
#include "compat_matrix/rules.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace compat {

struct Constraints {
  std::string paddle; // exact version or range; empty: any
  std::string cuda;   // "12" or "12.6"; empty: any
  std::string cudnn;  // "9" or "9.5"; empty: any
  bool need_tensorrt = false;
  std::string python; // "3.10"; empty: any
  std::vector<std::string> gpus;
  std::vector<std::string> drivers;
  std::string registry = "dockerhub"; // dockerhub | baidu | HOST/PATH (a mirror)
  std::string kind = "runtime";       // runtime | dev
  bool strict_driver = false;
  bool allow_forward_compat = false;
  bool pre = false; // consider pre-releases (also when `paddle` names one)
  // How to name a constraint in errors: field("gpus", 1) -> "--gpu" or "spec.yaml:9:5: resolve.gpus[1]".
  std::function<std::string(const std::string& field, int index)> field = [](const std::string& f, int i) {
    return "--" + f + (i >= 0 ? "[" + std::to_string(i) + "]" : "");
  };
};

struct Candidate {
  std::string reference; // repository:tag
  std::string paddle;
  std::string python;
  const ImageRow* image = nullptr;
  DriverLevel level = DriverLevel::full;
  bool confirmed = true; // every row relied on is confirmed
  std::vector<std::string> reasons;
  std::vector<std::string> caveats;
  std::string min_driver;             // lowest driver with full compatibility
  std::string minor_driver;           // lowest with minor-version compatibility ("" none)
  std::vector<std::string> gpu_archs; // "sm_80", ... as shipped
};

struct Violation {
  std::string constraint; // "--driver", "--gpu", ...
  std::string message;
  std::vector<std::string> fixes;
};

struct Resolution {
  std::vector<Candidate> candidates; // ranked, best first
  std::vector<Violation> violations; // when nothing fits
  std::vector<Gpu> gpus;
  std::vector<std::string> notes; // how an input was read ("driver 470 read as 470.0")
};

// Throws util::Error(input) for malformed or contradictory constraints.
Resolution resolve(const Matrix& m, const Constraints& c);

nlohmann::json to_json(const Candidate& c);
// The choice, the candidates (all, or only the best), violations with fixes, GPUs.
nlohmann::json to_json(const Resolution& r, bool all);
// Human-readable report: the candidates with reasons and caveats, or the violations.
std::string describe(const Resolution& r, bool all);

} // namespace compat
