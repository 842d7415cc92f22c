#pragma once
// The protocol layer of the OCI distribution client for one registry host: blob
// HEAD/GET (resumed with Range), cross-repository mounts, uploads (through an
// upload session, registry/upload.hpp), manifests by tag or digest (OCI and Docker
// schema 2, images and indexes), tag listing and the referrers API with its fallback
// tag. Ping, scheme, authentication and retries are the transport layer's
// (registry/session.hpp), so callers see one call succeed or one util::Error fail
// (a registry::RegistryError, registry/error.hpp, when the registry refused it).
#include "oci/image.hpp"
#include "oci/layout.hpp"
#include "oci/types.hpp"
#include "registry/auth.hpp"
#include "registry/error.hpp"
#include "registry/http.hpp"
#include "registry/session.hpp"
#include "registry/upload.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace registry {

// ClientOptions, Stats, pull_scope and push_scope: registry/session.hpp.

using ManifestData = oci::ManifestBlob;

// Accept header value for manifests (OCI and Docker, images and indexes).
std::string manifest_accept();

// Blob streams, as the image model spells them.
using Reader = oci::Reader;
using BlobOpener = oci::BlobOpener;
using Progress = oci::Progress;

class Registry {
public:
  Registry(std::string host, std::shared_ptr<Transport> http, ClientOptions options, Credential credential,
           Stats& stats);
  const std::string& host() const { return m_session.host(); }
  Stats& stats() { return m_session.stats(); }

  // GET /v2/: reachability, scheme (https, or http for --insecure hosts), the auth
  // challenge and the API version header. Throws network/TLS/registry errors.
  void ping();
  // Checks the credentials with an authenticated GET /v2/ (for `login`).
  void verify_login();

  std::optional<std::int64_t> blob_size(const std::string& repo, const oci::Digest& d);
  // Streams a blob into sink from offset on; transport failures resume with a Range
  // request at the byte reached; `restart` is called when the server ignores the
  // range and the stream starts again at 0.
  void fetch_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t offset,
                  const std::function<void(const char*, std::size_t)>& sink, const std::function<void()>& restart,
                  const Progress& progress = {});
  // Downloads a blob into store, verifying size and digest while streaming;
  // resumes interrupted downloads. Nothing is left behind when it fails.
  void download_blob(const std::string& repo, const oci::Descriptor& d, oci::BlobStore& store,
                     const Progress& progress = {});
  // The same into a temporary file the caller commits (e.g. the layer cache).
  void download_into(const std::string& repo, const oci::Descriptor& d, util::AtomicFile& tmp,
                     const Progress& progress = {});
  // The first `max_bytes` bytes of a blob (a Range request; a registry that ignores the
  // range is cut off there), unverified: what a check of its format reads.
  std::string read_blob_head(const std::string& repo, const oci::Digest& d, std::size_t max_bytes);
  // A small blob (a config) read whole and verified.
  std::string read_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t max_size = 16 << 20);
  // Cross-repository mount; true when the registry mounted it.
  bool mount_blob(const std::string& repo, const oci::Digest& d, const std::string& from_repo);
  // Uploads a blob (streaming; chunked when the registry or a proxy demands it, or
  // when ClientOptions::chunk_size is set; resumes after the last acknowledged chunk).
  void upload_blob(const std::string& repo, const oci::Descriptor& d, const BlobOpener& open,
                   const Progress& progress = {});

  std::optional<oci::Descriptor> head_manifest(const std::string& repo, const std::string& reference);
  // GET by tag or digest; verifies the bytes against the digest.
  ManifestData get_manifest(const std::string& repo, const std::string& reference);
  void put_manifest(const std::string& repo, const std::string& reference, const ManifestData& m);
  std::vector<std::string> list_tags(const std::string& repo);
  // DELETE of a manifest by digest (its tags go with it). A registry that does not allow
  // deletes (405; distribution without storage.delete.enabled) is an error with that hint.
  void delete_manifest(const std::string& repo, const oci::Digest& d);
  // Referrers of a manifest: the referrers API, else the "sha256-<hex>" fallback tag.
  oci::Index referrers(const std::string& repo, const oci::Digest& d, bool* used_fallback = nullptr);

  std::string repo_url(const std::string& repo) const;

private:
  Session m_session;
  UploadHints m_upload_hints;
};

} // namespace registry
