#pragma once
// The registry as the build cache (`build --cache-from/--cache-to`, docs/registry-cache.md):
// a layer cache entry, or a base's view, stored in a registry repository as an OCI
// image manifest with an artifactType and the empty config, tagged by its key, whose
// layers are the blob itself and the record the build keeps beside it. The second
// place a build looks, after the local cache (layers::RemoteCache); what cannot be
// read or written is a warning, counted, never a failed build.
#include "imageio/source.hpp"
#include "layers/cache.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"
#include "signing/keys.hpp"

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace builder {

inline constexpr const char* k_cache_artifact_type = "application/vnd.paddle-image.cache.v1";
inline constexpr const char* k_cache_record_type = "application/vnd.paddle-image.cache.record.v1+json";
// The config of an entry for registries that refuse the empty descriptor's media type
// (the fallback form: no artifactType, this config type, the same two bytes).
inline constexpr const char* k_cache_config_type = "application/vnd.paddle-image.cache.config.v1+json";
inline constexpr const char* k_empty_type = "application/vnd.oci.empty.v1+json";
inline constexpr const char* k_cache_kind_annotation = "io.paddle-image.cache.kind";
inline constexpr const char* k_cache_key_annotation = "io.paddle-image.cache.key";
inline constexpr const char* k_cache_signature_annotation = "io.paddle-image.cache.signature";
inline constexpr const char* k_cache_signer_annotation = "io.paddle-image.cache.signer";

// What makes a layer's bytes besides its inputs: entries made by another version of
// the tool or of zlib/zstd never share a tag.
nlohmann::json cache_versions(const std::string& tool_version);

// The tag of an entry: "layer-HEX" or "view-HEX", HEX the SHA-256 of the kind, the key
// and the versions (70 characters; tags may have 128).
std::string cache_tag(layers::CacheEntryKind kind, const std::string& key, const nlohmann::json& versions);

// A registry repository named by --cache-from/--cache-to ("HOST/PATH", no tag or digest).
// Throws Error(usage) naming `flag` otherwise.
oci::ImageRef parse_cache_repository(const std::string& text, const std::string& flag);

// The deadline of each request of a cache lookup (and of the check before a store): a
// cache that does not answer within it is a miss, and its repository is not asked again
// in the build (RegistryCache marks it down).
inline constexpr long k_cache_lookup_deadline_s = 10;

struct RegistryCacheOptions {
  std::vector<oci::ImageRef> from; // looked at in order on a local miss
  std::vector<oci::ImageRef> to;   // written after a build or a hit
  imageio::Connect connect;
  // For lookups: one attempt, k_cache_lookup_deadline_s a request (empty: `connect`).
  imageio::Connect lookup_connect;
  oci::CopyOptions copy; // jobs and progress of the entries' pushes
  std::optional<signing::PrivateKey> sign_key;
  // Set: unsigned or wrongly signed entries are ignored. A writer with a sign key and no
  // verify key verifies with the sign key's public half: it signs only what it built
  // or verified (RegistryCache's constructor sets it).
  std::optional<signing::PublicKey> verify_key;
  nlohmann::json versions; // cache_versions()
  // Where this machine remembers the entries it wrote or found at a --cache-to repository
  // (the local cache's registry-cache/): a local hit whose entry was settled there less
  // than k_stored_marker_ttl ago is not asked about again. Empty: always asked.
  std::filesystem::path state_dir;
  std::function<void(const std::string&)> warn = [](const std::string&) {};
  std::function<void(const std::string&)> debug = [](const std::string&) {};
};

// What the registry cache did in one build (`--json`: "registry_cache").
// How long a remembered store stands before the registry is asked again (an entry pruned
// or a repository deleted since is written again after at most this long).
inline constexpr std::int64_t k_stored_marker_ttl_seconds = 24 * 3600;

struct RegistryCacheStats {
  // skipped: lookups and stores not made, their repository down (stalled, refused the
  // connection, answered 5xx or 429, or refused the credentials) since its first failure.
  std::size_t hits = 0, misses = 0, stored = 0, present = 0, skipped = 0;
  std::vector<std::string> warnings;
  nlohmann::json to_json() const;
};

// A checked entry as read from a repository.
struct CacheEntry {
  std::string tag;
  oci::Digest manifest;
  layers::CacheEntryKind kind = layers::CacheEntryKind::layer;
  std::string key;
  nlohmann::json versions;
  layers::BlobInfo blob;
  nlohmann::json record;
  std::string record_bytes; // as read: what the signature covers
  std::string signature;    // base64 DER, from the manifest's annotation ("": unsigned)
  bool is_signed() const { return !signature.empty(); }
};

// Reads the entry under `tag` of host/repo (HEAD, then GET by digest, then the record)
// and checks that it is one: its record names the key the tag is made from, its blob
// is the manifest's first layer. Throws Error(input) saying what is wrong; nullopt when
// no such tag.
std::optional<CacheEntry> read_cache_entry(registry::Registry& reg, const std::string& repo, const std::string& tag);

class RegistryCache : public layers::RemoteCache {
public:
  explicit RegistryCache(RegistryCacheOptions options);
  std::optional<layers::RemoteHit> fetch(layers::CacheEntryKind kind, const std::string& key) override;
  void download(const layers::RemoteHit& hit, util::AtomicFile& tmp) override;
  std::string check(const layers::RemoteHit& hit) override;
  bool writes() const override { return !m_options.to.empty(); }
  void store(layers::CacheEntryKind kind, const std::string& key, const layers::BlobInfo& info,
             const nlohmann::json& extra, const std::function<std::filesystem::path()>& local_file,
             const layers::RemoteHit* from) override;
  // Stores wait until flush() (the build calls it once its layers are built, before its
  // pushes, which then mount the blobs), which writes them, at most copy.jobs at a time:
  // uploads beside the layers' compression added their buffers to its peak RSS.
  void flush() override;
  RegistryCacheStats stats() const;
  // Whether hits are verified (a verify key, or the sign key's public half).
  bool verifies() const { return m_options.verify_key.has_value(); }
  std::optional<std::pair<std::string, std::string>> stored_at(const oci::Digest& d) const override;
  ~RegistryCache() override;

private:
  void warn(const std::string& line);
  // A repository (or its whole host, when the connection itself failed) that failed
  // once is not asked again in this build: true when `e` is such a failure (the
  // repository is then marked, with one warning saying what `doing` met).
  bool mark_down(const oci::ImageRef& repo, const util::Error& e, const std::string& doing);
  bool is_down(const oci::ImageRef& repo);
  std::shared_ptr<registry::Registry> quick(const std::string& host);
  std::optional<layers::RemoteHit> fetch_from(const oci::ImageRef& repo, layers::CacheEntryKind kind,
                                              const std::string& key, const std::string& tag);
  // What the tag of an entry being stored holds already: nothing, this entry (the same
  // blob; signed by our key when we sign), or something else (written over).
  enum class There { none, same, other };
  There entry_there(registry::Registry& reg, const std::string& repo, const std::string& tag,
                    const layers::BlobInfo& info, const std::function<oci::Digest(bool fallback)>& ours);
  // Counts a store (written, or there already) and remembers where the blob now is; with
  // `remember`, also on this machine (the marker of remembered()).
  void settle(const oci::ImageRef& repo, const std::string& tag, const layers::BlobInfo& info, bool present,
              bool remember = true);
  std::filesystem::path marker(const oci::ImageRef& repo, const std::string& tag) const;
  std::string marker_text(const layers::BlobInfo& info) const;
  // Whether this machine settled the entry of `tag` (this blob, signed as we sign) at
  // `repo` less than k_stored_marker_ttl_seconds ago.
  bool remembered(const oci::ImageRef& repo, const std::string& tag, const layers::BlobInfo& info) const;
  void store_to(const oci::ImageRef& repo, const std::string& tag, layers::CacheEntryKind kind, const std::string& key,
                const layers::BlobInfo& info, const nlohmann::json& extra,
                const std::function<std::filesystem::path()>& local_file, const layers::RemoteHit* from);
  // The `{}` config blob every entry names: uploaded once per repository, before the
  // entries (stores run side by side, and distribution 2.8 fails two concurrent uploads
  // of one blob with DIGEST_INVALID, and the manifest naming it with MANIFEST_BLOB_UNKNOWN).
  void ensure_empty_blob(registry::Registry& reg, const oci::ImageRef& repo);
  RegistryCacheOptions m_options;
  std::string m_signer;      // the sign key's fingerprint ("": entries are not signed)
  std::string m_verify_flag; // the flag the verify key came from, for messages
  std::mutex m_empty_mutex;
  std::set<std::string> m_empty_there; // registry/repository where `{}` is known to be
  mutable std::mutex m_mutex;
  RegistryCacheStats m_stats;
  std::set<std::string> m_down;                                       // "HOST" or "HOST/REPO", guarded by m_mutex
  std::map<std::string, std::pair<std::string, std::string>> m_homes; // blob digest -> (registry, repository)
  std::mutex m_store_mutex;                                           // guards m_queued
  std::vector<std::function<void()>> m_queued;                        // stores flush() has yet to write
};

// `cache ls`: every entry of a repository (tags listed, each read and checked; a tag
// that is not an entry is skipped, one that is a damaged entry is listed with its error).
struct CacheListing {
  std::vector<CacheEntry> entries;
  std::vector<std::pair<std::string, std::string>> damaged; // tag, what is wrong
};
CacheListing list_cache(registry::Registry& reg, const std::string& repo);

// `cache prune`: the entries no kept image uses (a layer entry whose blob is none of the
// images' layers, a view entry whose base layers are not the bottom of any of them),
// deleted by manifest digest unless `dry_run`.
struct CachePrune {
  std::vector<CacheEntry> kept, deleted;
  std::vector<std::pair<std::string, std::string>> damaged;
};
CachePrune prune_cache(registry::Registry& reg, const std::string& repo,
                       const std::vector<std::vector<oci::Digest>>& kept_images, bool dry_run);

} // namespace builder
