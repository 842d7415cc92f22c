#pragma once
// An apt repository as a debs layer names it (`deb URL SUITE COMPONENTS`, signed by a
// keyring): its InRelease (or Release + Release.gpg) verified with gpgv against that
// keyring, as apt verifies it, and each component's Packages index fetched and checked
// against the SHA-256 the signed Release lists. Nothing of a repository is used before
// its signature and hashes check out.
#include "debian/control.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace debian {

namespace fs = std::filesystem;

struct Repository {
  std::string url; // the archive root, as `deb URL ...` has it (credentials come from netrc, never here)
  std::string suite;
  std::vector<std::string> components;
  fs::path keyring;   // an OpenPGP keyring file (binary, as /usr/share/keyrings holds)
  std::string origin; // "spec.yaml:14:9"
};

// Fetches a URL: the bytes go to write(); restart() is called before the server sends
// the whole file again after a cut. Throws util::Error (network, registry, auth).
using Fetch = std::function<void(const std::string& url, const std::function<void(const char*, std::size_t)>& write,
                                 const std::function<void()>& restart)>;

struct ComponentIndex {
  std::string component;
  std::string path;     // "main/binary-amd64/Packages.xz", as the Release lists it
  std::string sha256;   // of that file
  std::string packages; // the index, decompressed
};

struct RepositoryIndex {
  Repository repo;
  std::string release;        // the signed text of the Release (armour and signature removed)
  std::string release_sha256; // of that text
  std::string signed_by;      // the fingerprint of the key that signed it (gpgv's VALIDSIG)
  std::vector<ComponentIndex> components;
};

// The file under the archive root ("dists/SUITE/InRelease"): URL joined with a path.
std::string repo_url(const Repository& r, const std::string& path);

// What gpgv says of `signed_file` (with `signature`: a detached one; without: a
// clearsigned file) against `keyring`: the signed text and the key's fingerprint.
// Error(integrity) naming `what` (the repository and file) when the signature is bad,
// made by a key the keyring lacks, or missing.
struct Verified {
  std::string text;
  std::string fingerprint;
};
Verified verify_signature(const fs::path& keyring, const std::string& signed_file, const std::string& signature,
                          const std::string& what, const fs::path& work);

// The SHA256 section of a Release: path -> {sha256, size}.
struct ReleaseFile {
  std::string sha256;
  std::int64_t size = -1;
};
std::vector<std::pair<std::string, ReleaseFile>> release_files(const std::string& release, const std::string& what);

// A Release's Valid-Until (RFC 2822 date, as apt reads it) against `now` (seconds since
// the epoch): Error(integrity) naming `what` when it has passed (a mirror replaying an
// old, still validly signed Release would hide the fixes made since). No field: valid.
void check_valid_until(const std::string& release, std::int64_t now, const std::string& what);

// Fetches and verifies the repository's Release and its components' Packages indexes
// for `arch` (the xz, gz or plain index, the first the Release lists). `work` holds
// gpgv's files for the call. Throws Error(integrity) for a bad signature or a hash
// mismatch, Error(input) for a component or architecture the Release lacks.
RepositoryIndex fetch_repository(const Repository& r, const std::string& arch, const Fetch& fetch,
                                 const fs::path& work);

// The bytes of a (possibly compressed) file, decompressed by its name's suffix (.xz,
// .gz, .bz2, .zst, .lz4, or none).
std::string decompress(const std::string& data, const std::string& name, const std::string& what);

} // namespace debian
