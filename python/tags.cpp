#include "python/tags.hpp"
#include "util/encoding.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace python {

namespace {

// glibc with an unknown version: see platform_tags in the header.
constexpr std::pair<int, int> assumed_glibc{2, 17};

// packaging assumes a glibc major version ends at minor 50 when it has to list the
// minors of an older major; only relevant if a glibc 3 ever appears.
constexpr int last_minor_of_older_major = 50;

// The architectures whose wheels run on `arch`: a 32-bit ARM userland on a 64-bit
// kernel reports armv8l but runs armv7l wheels.
std::vector<std::string> architectures(const std::string& arch) {
  if (arch == "armv8l") {
    return {"armv8l", "armv7l"};
  }
  return {arch};
}

bool has_manylinux(const std::vector<std::string>& archs) {
  static const std::set<std::string> with_manylinux = {"x86_64",  "i686",  "aarch64", "armv7l",     "ppc64",
                                                       "ppc64le", "s390x", "riscv64", "loongarch64"};
  return std::any_of(archs.begin(), archs.end(), [](const std::string& a) { return with_manylinux.count(a) > 0; });
}

std::string legacy_alias(int major, int minor) {
  if (major != 2) {
    return {};
  }
  switch (minor) {
  case 17:
    return "manylinux2014";
  case 12:
    return "manylinux2010";
  case 5:
    return "manylinux1";
  default:
    return {};
  }
}

std::vector<std::string> cpython_abis(const PythonTarget& t) {
  std::string version = std::to_string(t.major) + std::to_string(t.minor);
  // Before 3.8 release builds carried the pymalloc "m" flag in their ABI tag.
  if (t.major == 3 && t.minor < 8) {
    return {"cp" + version + "m"};
  }
  return {"cp" + version};
}

} // namespace

std::vector<std::string> platform_tags(const PythonTarget& target) {
  auto archs = architectures(target.arch);
  std::vector<std::string> out;
  if (has_manylinux(archs)) {
    auto glibc = target.glibc.value_or(assumed_glibc);
    // The glibc majors below the target's, newest first, each from its last minor.
    std::vector<std::pair<int, int>> tops = {glibc};
    for (int major = glibc.first - 1; major >= 2; --major) {
      tops.emplace_back(major, last_minor_of_older_major);
    }
    for (const auto& arch : archs) {
      // manylinux_2_5 is the floor on x86 (manylinux1); elsewhere manylinux2014 was the
      // first standard covering the architecture.
      int floor_minor = arch == "x86_64" || arch == "i686" ? 5 : 17;
      for (const auto& [major, top_minor] : tops) {
        int lowest = major == 2 ? floor_minor : 0;
        for (int minor = top_minor; minor >= lowest; --minor) {
          out.push_back("manylinux_" + std::to_string(major) + "_" + std::to_string(minor) + "_" + arch);
          if (auto alias = legacy_alias(major, minor); !alias.empty()) {
            out.push_back(alias + "_" + arch);
          }
        }
      }
    }
  }
  for (const auto& arch : archs) {
    out.push_back("linux_" + arch);
  }
  return out;
}

std::vector<std::string> supported_tags(const PythonTarget& target) {
  const auto platforms = platform_tags(target);
  const std::string major = std::to_string(target.major);
  const std::string cp = "cp" + major + std::to_string(target.minor);
  const bool abi3 = target.major == 3 && target.minor >= 2; // the stable ABI began with 3.2
  std::vector<std::string> out;
  auto add = [&](const std::string& py, const std::string& abi) {
    for (const auto& plat : platforms) {
      out.push_back(py + "-" + abi + "-" + plat);
    }
  };
  // Built for this interpreter: its own ABI, the stable ABI, no ABI.
  for (const auto& abi : cpython_abis(target)) {
    add(cp, abi);
  }
  if (abi3) {
    add(cp, "abi3");
  }
  add(cp, "none");
  // Stable-ABI builds for older minors run on newer ones.
  if (abi3) {
    for (int minor = target.minor - 1; minor >= 2; --minor) {
      add("cp" + major + std::to_string(minor), "abi3");
    }
  }
  // Pure-Python but platform-specific, then pure Python: this minor, the major alone,
  // then the older minors.
  std::vector<std::string> py_versions = {"py" + major + std::to_string(target.minor), "py" + major};
  for (int minor = target.minor - 1; minor >= 0; --minor) {
    py_versions.push_back("py" + major + std::to_string(minor));
  }
  for (const auto& py : py_versions) {
    add(py, "none");
  }
  out.push_back(cp + "-none-any");
  for (const auto& py : py_versions) {
    out.push_back(py + "-none-any");
  }
  return out;
}

std::optional<std::size_t> tag_rank(const WheelName& wheel, const std::vector<std::string>& supported) {
  std::set<std::string> expanded;
  for (const auto& py : wheel.python_tags) {
    for (const auto& abi : wheel.abi_tags) {
      for (const auto& plat : wheel.platform_tags) {
        expanded.insert(util::ascii_lower(py + "-" + abi + "-" + plat));
      }
    }
  }
  for (std::size_t i = 0; i < supported.size(); ++i) {
    if (expanded.count(util::ascii_lower(supported[i])) > 0) {
      return i;
    }
  }
  return std::nullopt;
}

} // namespace python
