#pragma once
// The compatibility rules the resolver and the doctor both apply (docs/resolve.md):
// which GPUs an image's architecture list serves, and how a driver runs a CUDA release.
#include "compat_matrix/matrix.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compat {

// --- GPU architectures

// 90 -> "sm_90".
std::string sm_name(int arch);
// "sm_90", "sm_90a" or "90" -> 90; nullopt for anything else.
std::optional<int> sm_number(const std::string& arch);
// A compute capability as an SM number: 9.0 -> 90.
int sm_of(const Version& cc);
// Binary compatibility: code for sm_XY runs on compute capability X.Z with Z >= Y (same
// major X). True when one of `archs` serves `cc`.
bool ships_code_for(const std::vector<int>& archs, const Version& cc);
// False when the release needs a newer compute capability than `cc` (its min_cc).
bool meets_min_cc(const ReleaseRow& release, const Version& cc);

// --- Driver levels

enum class DriverLevel { full = 0, minor = 1, forward = 2 };
std::string to_string(DriverLevel level);

// The drivers a CUDA release needs: `full` for full compatibility and, when not empty,
// `minor` for minor-version compatibility.
struct DriverNeeds {
  std::string full;
  std::string minor;
  static DriverNeeds of(const CudaRow& row);
  // The lowest driver accepted: `minor` unless strict (or there is none), else `full`.
  std::string lowest(bool strict) const;
};

// How `driver` runs CUDA with these needs, forward compatibility aside: full at or above
// `full`, minor at or above `minor` (not when strict), nullopt below both.
std::optional<DriverLevel> native_driver_level(const Version& driver, const DriverNeeds& needs, bool strict);

// Forward compatibility is for some GPU classes only (data-center GPUs): true when there
// are GPUs and every one is in a class the matrix lists.
bool forward_compat_gpus(const Matrix& m, const std::vector<std::string>& gpu_classes);
// The forward-compatibility branch `driver` belongs to for CUDA `cuda_major`; nullptr if none.
const ForwardBranch* forward_branch(const Matrix& m, const Version& driver, int cuda_major);

} // namespace compat
