#pragma once
// Package inventory of an image for an SBOM: what dpkg installed, read from the files it
// leaves (nothing is run). The files come from the image's merged tree
// (layers::BaseView, which applies the layers with whiteouts and opaque directories).
// The Python distributions are python::installed_distributions' (python/installed.hpp);
// inventory_file_cap names their files too, so the view keeps them.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace layers {

struct Package {
  std::string type;     // "deb"
  std::string name;     // as the package manager spells it (dpkg Package:, METADATA Name:)
  std::string version;  // dpkg Version: / METADATA Version:
  std::string arch;     // deb Architecture: (empty for pypi)
  std::string location; // path in the image: "var/lib/dpkg/status", or the .dist-info/.egg-info directory path
  std::string layer;    // digest string of the layer that provided it ("sha256:...")
  bool operator==(const Package&) const = default;
};

struct Inventory {
  std::vector<Package> packages;    // sorted by (type, name, version, location)
  std::string os_id, os_version_id; // from the topmost layer that ships os-release
};

// The size cap of a file the inventory reads, by its path in the image ("a/b", no
// leading '/'): var/lib/dpkg/status, a var/lib/dpkg/status.d/ file (distroless), a
// .dist-info's METADATA, an .egg-info's PKG-INFO or the .egg-info file itself under a
// site-packages or dist-packages directory, etc/os-release or usr/lib/os-release, an
// embedded SPDX document (is_embedded_sbom). 0 for any other path.
std::int64_t inventory_file_cap(const std::string& path);

// The packages of a merged file tree (the layers already applied, whiteouts and all):
// `files` holds the contents of its inventory files (a file over its cap is skipped, as
// if absent), `layer_of` names the layer that wrote a path last. Packages are sorted by
// (type, name, version, location); the OS is etc/os-release's, else usr/lib/os-release's.
Inventory inventory_of(const std::map<std::string, std::string>& files,
                       const std::function<std::string(const std::string&)>& layer_of);

// Package URL: pkg:deb/<os_id>/<name>@<version>?arch=<arch>&distro=<os_id>-<version_id>
// (no distro without a version id; os_id "debian" when unknown). Segments are
// percent-encoded ('+' -> %2B, ':' -> %3A).
std::string purl(const Package& p, const Inventory& inv);

// The .dist-info or .egg-info directory (or the .egg-info file) whose metadata `path`
// is, under a site-packages or dist-packages directory: ".../x-1.dist-info" for
// ".../x-1.dist-info/METADATA"; "" for any other path. python::installed_distributions
// reads the distributions these files name.
std::string python_dist_location(const std::string& path);

// Whether `path` is an SPDX document the image carries about software that no package
// manager installed: var/lib/db/sbom/NAME.spdx.json, where apko and Wolfi images keep
// theirs and syft reads them (paddle-image's own image keeps its release archive's
// there). builder::image_sbom lists their packages.
bool is_embedded_sbom(const std::string& path);

// ID, VERSION_ID and PRETTY_NAME of an os-release file (shell-style quoting undone).
struct OsRelease {
  std::string id, version_id, pretty_name;
};
OsRelease parse_os_release(const std::string& content);

// Helpers, exposed for tests.
// Parses a dpkg status file; with `installed_only`, a stanza needs Status "install ok
// installed" (else a present Status must say so). Stanzas without Package or Version,
// or with a malformed line, are skipped.
std::vector<Package> parse_dpkg_status(const std::string& content, bool installed_only);

} // namespace layers
