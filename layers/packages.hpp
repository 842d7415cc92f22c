#pragma once
// Package inventory of an image for an SBOM: what dpkg and Python installed, read from
// the layers' tar members alone (nothing is run or unpacked). Each layer is scanned on
// its own (a pure function of its bytes, cacheable by layer digest); merge_layers then
// applies the layers bottom to top with overlay semantics (whiteouts, opaque dirs).
#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layers {

struct Package {
  std::string type;     // "deb" or "pypi"
  std::string name;     // as the package manager spells it (dpkg Package:, METADATA Name:)
  std::string version;  // dpkg Version: / METADATA Version:
  std::string arch;     // deb Architecture: (empty for pypi)
  std::string location; // path in the image: "var/lib/dpkg/status", or the .dist-info/.egg-info directory path
  std::string layer;    // digest string of the layer that provided it ("sha256:...")
  bool operator==(const Package&) const = default;
};

// What one layer contributes; a pure function of the layer's bytes, so callers cache it
// by layer digest.
struct LayerPackages {
  // The layer ships var/lib/dpkg/status: parsed (only Status "install ok installed"
  // entries). A status file over the size cap counts as shipped and empty.
  std::optional<std::vector<Package>> dpkg_status;
  std::vector<Package> dpkg_status_d; // var/lib/dpkg/status.d/<file> (distroless style), one per file
  std::vector<Package> python;        // */{site,dist}-packages/*.dist-info/METADATA, *.egg-info (file or dir PKG-INFO)
  std::vector<std::string> whiteouts; // paths removed by ".wh.NAME" entries (normalised, no leading "./" or "/")
  std::vector<std::string> opaque_dirs; // dirs with ".wh..wh..opq" ("" is the root)
  std::string os_id, os_version_id;     // from etc/os-release (else usr/lib/os-release) if the layer ships one
  bool operator==(const LayerPackages&) const = default;
};

// The version of the JSON form written by to_json; layer_packages_from_json refuses
// another one, so a cache written by an older scanner reads as a miss.
constexpr int k_layer_packages_format = 1;

nlohmann::json to_json(const LayerPackages& layer); // for a cache file
// Throws util::Error (input) on a document of another shape or format.
LayerPackages layer_packages_from_json(const nlohmann::json& j);

// Scans a layer (gzip, zstd or plain tar) given as a stream; `layer` is its digest
// string, `what` names it in errors. A corrupt tar is scan_tar's error; malformed
// package metadata is skipped.
LayerPackages scan_layer_packages(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& layer,
                                  const std::string& what);

struct Inventory {
  std::vector<Package> packages;    // sorted by (type, name, version, location)
  std::string os_id, os_version_id; // from the topmost layer that ships os-release
};

// Applies layers bottom to top: a later dpkg status replaces the earlier one wholesale;
// whiteouts and opaque dirs remove lower layers' python packages and status.d files
// beneath them (a whited-out var/lib/dpkg/status removes the deb list); a package
// directory re-shipped by a later layer replaces the earlier one.
Inventory merge_layers(const std::vector<LayerPackages>& bottom_to_top);

// Package URL: pkg:deb/<os_id>/<name>@<version>?arch=<arch>&distro=<os_id>-<version_id>
// (no distro without a version id; os_id "debian" when unknown), pkg:pypi/<normalised
// name>@<version>. Segments are percent-encoded ('+' -> %2B, ':' -> %3A).
std::string purl(const Package& p, const Inventory& inv);

// Helpers, exposed for tests.
// Parses a dpkg status file; with `installed_only`, a stanza needs Status "install ok
// installed" (else a present Status must say so). Stanzas without Package or Version,
// or with a malformed line, are skipped.
std::vector<Package> parse_dpkg_status(const std::string& content, bool installed_only);
// Name and Version from the header part of a METADATA / PKG-INFO file; nullopt when
// either is missing.
std::optional<Package> parse_python_metadata(const std::string& content);
// PEP 503 name normalisation: lowercased, runs of '-', '_', '.' become one '-'.
std::string normalize_python_name(const std::string& name);

} // namespace layers
