#pragma once
// paddle-image's own release documents (scripts/release.sh, through `paddle-image
// release-supply-chain`): the SPDX 2.3 SBOMs of the self-contained archive and of the
// .deb, and the SLSA v1 provenance predicate of the release files. They are made with
// the code the image documents are made with (signing::provenance_predicate,
// signing::uuid_v5, layers::purl, layers::parse_dpkg_status) and read nothing but what
// they are given: equal inputs give equal bytes (times from SOURCE_DATE_EPOCH, document
// namespaces from the described file's SHA-256).
#include "layers/packages.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace builder {

namespace fs = std::filesystem;

inline constexpr const char* k_release_build_type = "https://paddle-image.dev/buildtypes/release/v1";
inline constexpr const char* k_release_builder_id = "https://paddle-image.dev/release/scripts/release.sh";

// What the release was made from and with (FACTS.json, written by `facts`).
struct ReleaseFacts {
  std::string version; // paddle-image's
  std::string commit;  // "" when not built from git
  bool dirty = false;
  std::string repository; // the source repository's URL
  std::int64_t epoch = 0; // SOURCE_DATE_EPOCH
  std::string glibc_min;
  std::vector<std::string> command;            // how release.sh was run
  std::map<std::string, std::string> cmake;    // the release build's settings
  std::map<std::string, std::string> tools;    // name -> version
  std::string os_id = "debian", os_version_id; // where it was made
  std::string distro() const;                  // "debian-12"
  nlohmann::json to_json() const;
  // Throws Error(input) naming `file` and the field for a document that is not one.
  static ReleaseFacts from_json(const nlohmann::json& j, const std::string& file);
};

// One library the archive bundles under lib/ (LIBS.tsv: SONAME, package, version,
// architecture, tab-separated; the package "" when no Debian package has the file).
struct BundledLibrary {
  std::string soname, package, version, arch;
};
std::vector<BundledLibrary> parse_bundled_libraries(const std::string& tsv);

// The Debian packages of the machine the release is made on.
struct HostPackages {
  std::function<std::optional<layers::Package>(const std::string& name)> installed;
  // /usr/share/doc/NAME/copyright's text, when there is one.
  std::function<std::optional<std::string>(const std::string& name)> copyright;
};
// The packages under `root` (var/lib/dpkg/status, usr/share/doc).
HostPackages host_packages(const fs::path& root);

// The facts of a release build: the given ones, plus the release build's CMake settings
// (BUILD/CMakeCache.txt), the OS (os-release under `root`) and the versions of dpkg,
// dpkg-dev, binutils and libc6 from the host's packages.
ReleaseFacts release_facts(ReleaseFacts given, const fs::path& build_dir, const fs::path& root,
                           const HostPackages& host);

// The archive's SBOM: paddle-image (version, source, the archive's SHA-256) and each
// bundled library as the file it is in the archive (SHA-1, SHA-256) contained in the
// Debian package it came from (version, purl, declared license). Throws Error(input)
// when the archive lacks a library of `libs`.
nlohmann::json archive_sbom(const ReleaseFacts& facts, const fs::path& archive, const std::vector<BundledLibrary>& libs,
                            const HostPackages& host);

// What `dpkg-deb -f` says of the .deb.
struct DebFields {
  std::string version, arch, depends;
};
// The .deb's SBOM: paddle-image and each package of its Depends (the first of
// alternatives), DEPENDS_ON, at the version installed here. Throws Error(input) for a
// dependency that is not installed.
nlohmann::json deb_sbom(const ReleaseFacts& facts, const fs::path& deb, const DebFields& fields,
                        const HostPackages& host);

// The SLSA v1 predicate of the release: the source at its commit, the command, the
// build's settings, and the Debian packages bundled (as purls, with the files).
nlohmann::json release_provenance(const ReleaseFacts& facts, const std::vector<BundledLibrary>& libs);

} // namespace builder
