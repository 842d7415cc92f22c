#pragma once
// Installing Python wheels without pip and without the target interpreter
// (PEP 427 / 491 / the "binary distribution format" spec): files are unpacked into
// a staging tree laid out like the image, scripts get the target's shebang,
// console-script launchers are generated and .dist-info gets INSTALLER and RECORD.
#include "python/metadata.hpp"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace python {

namespace fs = std::filesystem;

struct WheelName {
  std::string distribution; // as in the file name
  std::string version;
  std::string build;
  std::vector<std::string> python_tags;
  std::vector<std::string> abi_tags;
  std::vector<std::string> platform_tags;
  static WheelName parse(const std::string& filename); // throws util::Error(input)
};

struct PythonTarget {
  int major = 3;
  int minor = 0;
  std::string arch = "x86_64";              // machine name as in platform tags
  std::optional<std::pair<int, int>> glibc; // unknown: manylinux not checked
  std::string interpreter;                  // absolute image path, e.g. /usr/bin/python3.11
  std::string site_packages;                // absolute image path
  std::string scripts_dir;                  // absolute image path, e.g. /usr/local/bin
  std::string prefix;                       // for .data/data and headers, e.g. /usr/local
  std::string describe() const;             // "CPython 3.11 on linux x86_64 (glibc 2.36)"
};

// Empty when the wheel can run on the target; otherwise why not.
std::optional<std::string> incompatibility(const WheelName& wheel, const PythonTarget& target);

// The .dist-info/METADATA text of the wheel at `wheel` (a cache blob may have any
// name; `filename` is the wheel's own). Throws util::Error(input) for a file that is
// not a wheel or has no METADATA.
std::string read_wheel_metadata(const fs::path& wheel, const std::string& filename);

struct InstalledWheel {
  std::string name;
  std::string version;
  std::string filename;
  std::string sha256; // of the .whl file
  std::size_t files = 0;
};

// What a wheels layer installed, in install order: kept beside the layer in the cache
// and reported by the build (metadata "wheels").
struct WheelInventory {
  std::vector<InstalledWheel> wheels;
};

// The JSON form (cache files, build metadata): {"name", "version", "filename",
// "sha256", "files"} per wheel; an inventory is an array of them. The readers throw
// nlohmann::json::exception on a malformed document.
nlohmann::json to_json(const InstalledWheel& wheel);
InstalledWheel installed_wheel_from_json(const nlohmann::json& j);
nlohmann::json to_json(const WheelInventory& inventory);
WheelInventory wheel_inventory_from_json(const nlohmann::json& j);

// Unpacks `wheel` into staging_root (paths inside it are image paths). Refuses
// members escaping the install root, corrupt archives and RECORD mismatches.
// `owners` maps image paths already installed to the wheel that wrote them.
InstalledWheel install_wheel(const fs::path& wheel, const PythonTarget& target, const fs::path& staging_root,
                             std::map<std::string, std::string>& owners);

} // namespace python
