#pragma once
// A debs layer's lock file (JSON, docs/spec.md "debs layers"): what `paddle-image lock`
// resolved for the layer's request against the base, every package with its exact
// version, architecture, file and SHA-256. The build installs exactly this and checks
// first that it still answers the spec's request on the build's base.
#include "debian/resolve.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace debian {

struct Request {
  std::vector<std::string> packages; // "name" or "name=version", as the spec lists them
  std::vector<Repository> repositories;
  std::string architecture;
};

struct Lock {
  static constexpr int k_version = 1;
  Request request;                         // what was locked (the keyrings by path are not part of it)
  std::string base_status_sha256;          // of the dpkg status resolved against ("" for none)
  std::vector<std::string> release_sha256; // per repository: the signed Release's text
  std::vector<std::string> signed_by;      // per repository: the key's fingerprint
  std::vector<LockedPackage> packages;
  std::vector<std::string> already; // requested, already in the base
};

// The request as the lock records and compares it (URLs without credentials).
nlohmann::json request_json(const Request& r);
std::string lock_text(const Lock& lock);
// Error(input) naming the file (and the field) for a lock that is not one.
Lock parse_lock(const std::string& text, const std::string& file);

} // namespace debian
