#pragma once
// Dependency resolution is apt's own: apt-get runs against a private root (as
// mmdebstrap runs it), whose dpkg status is the base's and whose only sources are the
// verified indexes, served to it from local files. apt decides what `install PKGS`
// needs (Depends, Pre-Depends, alternatives, Provides, versions, Multi-Arch) and prints
// the files it would fetch; each maps back to its record in the verified index, so the
// lock holds exactly what the repository signed. Nothing is downloaded or installed.
#include "debian/repository.hpp"

#include <string>
#include <vector>

namespace debian {

// One package of a lock: what the build fetches, checks and installs.
struct LockedPackage {
  std::string name, version, architecture, multi_arch;
  std::string filename; // under the repository's root
  std::string sha256;
  std::int64_t size = -1;
  std::string repository; // the repository's URL, as the spec names it
  bool operator==(const LockedPackage&) const = default;
};

struct Resolution {
  std::vector<LockedPackage> packages; // in apt's install order
  std::vector<std::string> already;    // requested packages the base has at a satisfying version: "libc6 2.36-9"
};

// apt's answer for installing `requests` ("name" or "name=version") on `status` (a dpkg
// status file's text: the base's) from `repos`, for `arch`. `work` is the private
// root's parent. Error(input) naming `where` with apt's own reasons when it cannot; a
// package apt would upgrade in the base is refused (a debs layer adds packages, it does
// not replace the base's).
Resolution resolve(const std::vector<RepositoryIndex>& repos, const std::string& status,
                   const std::vector<std::string>& requests, const std::string& arch, const fs::path& work,
                   const std::string& where);

} // namespace debian
