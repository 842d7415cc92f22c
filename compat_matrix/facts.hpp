#pragma once
// What an image states about itself and about the GPU host it needs, as the
// io.paddle-image.* labels carry it (docs/labels.md): the one type the build writes as
// labels and that the doctor (`doctor --image`), `render k8s-job` and `warm` read.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace compat {

struct ImageFacts {
  std::string source;               // names the image in messages ("oci:out:v1", "--requires")
  std::string cuda;                 // "12.0"
  std::string cudnn;                // "8.9"
  std::string tensorrt;             // "8.6"
  std::string paddle;               // "2.6.1"
  std::string python;               // "3.11"
  std::string driver_min;           // full compatibility, "525.60.13"
  std::string driver_min_compat;    // minor-version compatibility
  std::vector<std::string> archs;   // "sm_80"
  std::uint64_t gpu_memory_mib = 0; // 0: unstated
  std::string require_cuda;         // NVIDIA_REQUIRE_CUDA's cuda>= floor (an ENV fact, never a label)

  // io.paddle-image.KEY -> value for every stated fact (empty ones left out).
  std::map<std::string, std::string> labels() const;
  // Reads the labels; a label that does not parse is util::Error(input) naming it, its
  // value and what it should be. Unknown io.paddle-image.* keys are ignored.
  static ImageFacts from_labels(const std::map<std::string, std::string>& labels, std::string source);
};

// The label key of a fact: "io.paddle-image." + key.
inline constexpr const char* k_label_prefix = "io.paddle-image.";

// "sm_90", "sm_90a", "90" or "9.0" -> "sm_90" / "sm_90a"; anything else: nullopt.
std::optional<std::string> normalise_arch(const std::string& s);
// The forms normalise_arch takes, for messages.
extern const char* const k_arch_forms;
// Dotted numbers of bounded size ("12.6", "560.28.03").
bool is_plain_version(const std::string& s);
// A Paddle version: dotted numbers with a pre-release or .postN ("3.0.0b1", "2.6.1.post117").
bool is_paddle_version(const std::string& s);

} // namespace compat
