#include "compat_matrix/rules.hpp"

#include <algorithm>

namespace compat {

std::string sm_name(int arch) {
  return "sm_" + std::to_string(arch);
}

std::optional<int> sm_number(const std::string& arch) {
  std::string d = arch.rfind("sm_", 0) == 0 ? arch.substr(3) : arch;
  if (!d.empty() && d.back() == 'a') {
    d.pop_back();
  }
  if (d.empty() || d.size() > 3 || !std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoi(d);
}

int sm_of(const Version& cc) {
  int major = static_cast<int>(cc.parts.at(0));
  int minor = cc.parts.size() > 1 ? static_cast<int>(cc.parts[1]) : 0;
  return major * 10 + minor;
}

bool ships_code_for(const std::vector<int>& archs, const Version& cc) {
  int major = static_cast<int>(cc.parts.at(0));
  int minor = cc.parts.size() > 1 ? static_cast<int>(cc.parts[1]) : 0;
  return std::any_of(archs.begin(), archs.end(), [&](int a) { return a / 10 == major && a % 10 <= minor; });
}

bool meets_min_cc(const ReleaseRow& release, const Version& cc) {
  return release.min_cc.empty() || !Version::valid(release.min_cc) || !(cc < Version::parse(release.min_cc));
}

std::string to_string(DriverLevel level) {
  switch (level) {
  case DriverLevel::full:
    return "full";
  case DriverLevel::minor:
    return "minor-version";
  case DriverLevel::forward:
    return "forward";
  }
  return "full";
}

DriverNeeds DriverNeeds::of(const CudaRow& row) {
  return DriverNeeds{row.driver_full, row.driver_minor};
}

std::string DriverNeeds::lowest(bool strict) const {
  return strict || minor.empty() ? full : minor;
}

std::optional<DriverLevel> native_driver_level(const Version& driver, const DriverNeeds& needs, bool strict) {
  if (driver >= Version::parse(needs.full)) {
    return DriverLevel::full;
  }
  if (!strict && !needs.minor.empty() && driver >= Version::parse(needs.minor)) {
    return DriverLevel::minor;
  }
  return std::nullopt;
}

bool forward_compat_gpus(const Matrix& m, const std::vector<std::string>& gpu_classes) {
  return !gpu_classes.empty() && std::all_of(gpu_classes.begin(), gpu_classes.end(), [&](const std::string& c) {
    return std::find(m.forward_gpu_classes.begin(), m.forward_gpu_classes.end(), c) != m.forward_gpu_classes.end();
  });
}

const ForwardBranch* forward_branch(const Matrix& m, const Version& driver, int cuda_major) {
  for (const auto& b : m.forward_branches) {
    if (driver.major() == b.driver_major &&
        std::find(b.cuda_majors.begin(), b.cuda_majors.end(), cuda_major) != b.cuda_majors.end()) {
      return &b;
    }
  }
  return nullptr;
}

} // namespace compat
