#include "compat_matrix/facts.hpp"

#include "util/error.hpp"

#include <regex>

namespace compat {

using util::Error;
using util::ErrorKind;

const char* const k_arch_forms = "sm_90, 90 or 9.0 (an SM architecture or compute capability)";

// A stated fact that does not parse is an error naming the label, never a silent skip
// or a crash further on.
bool is_plain_version(const std::string& s) {
  static const std::regex re("[0-9]{1,9}(\\.[0-9]{1,9}){0,3}");
  return std::regex_match(s, re);
}

bool is_paddle_version(const std::string& s) {
  // Pre-releases (3.0.0b1) and pip's local builds (2.6.1.post117).
  static const std::regex re("[0-9]{1,9}(\\.[0-9]{1,9}){0,3}((a|b|rc)[0-9]{1,9})?(\\.post[0-9]{1,9})?");
  return std::regex_match(s, re);
}

namespace {

void check_label(const std::string& key, const std::string& value, bool ok, const std::string& expected) {
  if (!ok) {
    throw Error(ErrorKind::input, "label " + key + "='" + value + "' is not " + expected,
                "fix the label when building the image (docs/labels.md), or give the needs with --requires");
  }
}

} // namespace

std::optional<std::string> normalise_arch(const std::string& s) {
  static const std::regex sm("(?:sm_)?([1-9][0-9]{1,2}a?)");
  static const std::regex cc("([1-9][0-9]?)\\.([0-9])");
  std::smatch m;
  if (std::regex_match(s, m, sm)) {
    return "sm_" + m[1].str();
  }
  if (std::regex_match(s, m, cc)) {
    return "sm_" + m[1].str() + m[2].str();
  }
  return std::nullopt;
}

std::map<std::string, std::string> ImageFacts::labels() const {
  std::map<std::string, std::string> out;
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) {
      out[std::string(k_label_prefix) + key] = v;
    }
  };
  put("cuda.version", cuda);
  put("cudnn.version", cudnn);
  put("tensorrt.version", tensorrt);
  put("paddle.version", paddle);
  put("python.version", python);
  put("driver.min", driver_min);
  put("driver.min-compat", driver_min_compat);
  std::string joined;
  for (const auto& a : archs) {
    joined += (joined.empty() ? "" : ",") + a;
  }
  put("gpu.archs", joined);
  put("gpu.memory-mib", gpu_memory_mib > 0 ? std::to_string(gpu_memory_mib) : "");
  return out;
}

ImageFacts ImageFacts::from_labels(const std::map<std::string, std::string>& labels, std::string source) {
  ImageFacts f;
  f.source = std::move(source);
  auto label = [&](const char* key) {
    auto it = labels.find(std::string(k_label_prefix) + key);
    return it == labels.end() ? std::string{} : it->second;
  };
  auto key = [](const char* k) { return std::string(k_label_prefix) + k; };
  const char* version_forms = "a version (dotted numbers, e.g. 12.6 or 560.28.03)";
  for (auto [k, field] : {std::pair{"cuda.version", &f.cuda},
                          {"cudnn.version", &f.cudnn},
                          {"tensorrt.version", &f.tensorrt},
                          {"python.version", &f.python},
                          {"driver.min", &f.driver_min},
                          {"driver.min-compat", &f.driver_min_compat}}) {
    std::string v = label(k);
    check_label(key(k), v, v.empty() || is_plain_version(v), version_forms);
    *field = v;
  }
  f.paddle = label("paddle.version");
  check_label(key("paddle.version"), f.paddle, f.paddle.empty() || is_paddle_version(f.paddle),
              "a Paddle version (e.g. 3.0.0, 3.0.0b1 or 2.6.1.post117)");
  std::string memory = label("gpu.memory-mib");
  if (!memory.empty()) {
    static const std::regex mib("[1-9][0-9]{0,8}");
    check_label(key("gpu.memory-mib"), memory, std::regex_match(memory, mib), "a whole number of MiB (e.g. 40960)");
    f.gpu_memory_mib = std::stoull(memory);
  }
  std::string archs = label("gpu.archs");
  std::size_t i = 0;
  while (!archs.empty() && i <= archs.size()) {
    auto j = archs.find(',', i);
    std::string a = archs.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!a.empty()) {
      auto norm = normalise_arch(a);
      check_label(key("gpu.archs"), archs, norm.has_value(),
                  "a comma-separated list of architectures: '" + a + "' is not one of the forms " + k_arch_forms);
      f.archs.push_back(*norm);
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  return f;
}

} // namespace compat
