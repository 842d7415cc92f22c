#pragma once
// An OCI distribution client for one registry host: ping and API check, blob
// HEAD/GET/upload (monolithic or chunked, resumable), cross-repository mounts,
// manifests by tag or digest (OCI and Docker schema 2, images and indexes), tag
// listing and the referrers API with its fallback tag. Authentication (anonymous,
// basic, bearer tokens from the WWW-Authenticate challenge, cached per scope and
// refreshed on expiry or a 401) and retries with exponential backoff, jitter and
// Retry-After happen here, so callers see one call succeed or one util::Error fail.
#include "oci/image.hpp"
#include "oci/layout.hpp"
#include "oci/types.hpp"
#include "registry/auth.hpp"
#include "registry/http.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace registry {

struct ClientOptions {
  std::set<std::string> insecure; // hosts allowed plain HTTP or unverified TLS (--insecure)
  std::string ca_file;            // extra CA (--ca-file)
  int max_attempts = 6;           // per request, counting the first
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
  long stall_timeout_s = 30;
  long connect_timeout_s = 15;
  std::int64_t chunk_size = 0; // 0: one streaming PUT unless the registry demands chunks
  Logger log;
};

// Counters for the metadata JSON; shared by all registries of one command.
struct Stats {
  std::atomic<std::int64_t> bytes_uploaded{0}, bytes_mounted{0}, bytes_skipped{0}, bytes_downloaded{0};
  std::atomic<std::int64_t> blobs_uploaded{0}, blobs_mounted{0}, blobs_skipped{0}, blobs_downloaded{0};
  std::atomic<std::int64_t> retries{0}, manifests_put{0};
};

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
  const std::string& host() const { return m_host; }
  Stats& stats() { return m_stats; }

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
  // Referrers of a manifest: the referrers API, else the "sha256-<hex>" fallback tag.
  oci::Index referrers(const std::string& repo, const oci::Digest& d, bool* used_fallback = nullptr);

  std::string repo_url(const std::string& repo) const;

private:
  struct Token {
    std::string value;
    double expires_at = 0; // steady seconds
  };

  // Sends a request built by make() (called again for each attempt) with auth for
  // scope, retrying transport errors and 408/429/5xx with backoff and Retry-After and
  // refreshing the token after a 401. Returns the final response; statuses in
  // `accept` are success, others become errors (or are returned when `raw`).
  Response send(const std::function<Request()>& make, const std::string& scope, const std::string& what,
                std::initializer_list<long> accept, bool raw = false);
  std::string auth_header(const std::string& scope, bool force_refresh);
  std::string fetch_token(const std::string& scope);
  [[noreturn]] void fail_status(const Response& r, const std::string& what, const std::string& scope);
  [[noreturn]] void fail_transport(const TransportFailure& f, const std::string& what);
  void backoff(int attempt, const Response* r, const std::string& why);
  TlsPolicy tls() const;
  std::string absolute(const std::string& location) const;
  struct UploadFailure {
    std::string message;
    std::optional<Response> response; // the last refusal (for Retry-After)
    int curl_code = 0;                // the last transport failure
  };
  bool upload_once(const std::string& repo, const oci::Descriptor& d, const BlobOpener& open, const Progress& progress,
                   UploadFailure& failure);

  std::string m_host;
  std::string m_endpoint; // where the API lives: Docker Hub's is registry-1.docker.io
  std::shared_ptr<Transport> m_http;
  ClientOptions m_opt;
  Credential m_cred;
  Stats& m_stats;
  std::mutex m_mutex; // guards everything below
  bool m_pinged = false;
  std::string m_scheme = "https";
  std::optional<Challenge> m_challenge;
  std::map<std::string, Token> m_tokens;
  std::atomic<bool> m_chunked{false};
  std::atomic<std::int64_t> m_chunk_min{0};
};

std::string pull_scope(const std::string& repo);
std::string push_scope(const std::string& repo);

} // namespace registry
