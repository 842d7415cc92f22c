#pragma once
// The layer cache: layer input key -> compressed blob. Shared by parallel builds
// (flock): builds hold a shared lock on the cache, a per-key exclusive lock while
// producing a layer; `cache prune` takes the cache lock exclusively.
#include "layers/cache_layout.hpp"
#include "layers/compress.hpp"
#include "oci/layout.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace layers {

namespace fs = std::filesystem;

struct PruneResult {
  std::int64_t bytes_before = 0;
  std::int64_t bytes_after = 0;
  std::size_t layers_removed = 0;
  std::size_t blobs_removed = 0;
  std::size_t views_removed = 0; // base-view/ files (and the SBOM scans of older versions)
};

// What the cache keeps beside a layer's blob, for the build to report again on a hit.
// Stored as the key file's "extra" object, holding only the fields that are set.
struct LayerRecord {
  std::optional<std::size_t> entries; // tar entries of a layer the build made
  // A wheels layer: what was installed (python::WheelInventory's JSON form; the cache
  // keeps it without reading it).
  std::optional<nlohmann::json> wheels;
  // The layer's directories and symlinks ([[path, type, mode, uid, gid, uname, gname,
  // target], ...]), so a later layer of the build lands on them when this one is reused.
  std::optional<nlohmann::json> tree;
  // Part 1 of a split layer (spec `split`): how many parts the layer has.
  std::optional<std::size_t> parts;
};
nlohmann::json to_json(const LayerRecord& record);
// A blob's info as the key files and the registry cache's records hold it: {digest,
// diff_id, size, uncompressed_size, media_type}; reading throws nlohmann::json::exception
// or Error(input) on a malformed one.
nlohmann::json to_json(const BlobInfo& b);
BlobInfo blob_info_from_json(const nlohmann::json& j);
// Throws nlohmann::json::exception on a malformed record.
LayerRecord layer_record_from_json(const nlohmann::json& j);

// A debug-level log line (a sink passed in by the caller; empty: not logged).
using DebugLog = std::function<void(const std::string& line)>;

// What a second-level cache holds: a layer's blob, or a base's view (a file tree of its
// own format). On the wire (the registry cache's records and tags) by entry_kind_name.
enum class CacheEntryKind { layer, base_view };
// "layer", "base-view".
const char* entry_kind_name(CacheEntryKind kind);
// The kind a record names; nullopt for a name of no kind.
std::optional<CacheEntryKind> parse_entry_kind(const std::string& name);

// What a second-level cache (a registry repository: builder/registry_cache) holds for
// a key: the blob's info and the record beside it, and where the blob lives.
struct RemoteHit {
  BlobInfo info;
  nlohmann::json extra; // the LayerRecord (or a view's record) in its stored form
  std::string registry; // the blob's home, mountable there
  std::string repository;
  bool verified = false; // signed by the --cache-verify-key
};

// The second place a build looks on a local miss. Keys are portable: made from the
// content of the inputs (never paths, inodes or times), so another machine finds them.
// Every failure (unreachable, refused, damaged, unsigned) is the implementation's to
// warn about and count: the build goes on as on a miss.
class RemoteCache {
public:
  virtual ~RemoteCache() = default;
  // The entry of `kind` for `key`, checked; nullopt on a miss.
  virtual std::optional<RemoteHit> fetch(CacheEntryKind kind, const std::string& key) = 0;
  // The hit's blob, downloaded into tmp and checked against its digest and size.
  virtual void download(const RemoteHit& hit, util::AtomicFile& tmp) = 0;
  // The hit's blob streamed through a layers::BlobCheck and not kept: what is wrong with
  // it against its record ("" nothing). For an unverified hit whose blob stays remote.
  virtual std::string check(const RemoteHit& hit) = 0;
  // Whether store() writes anywhere (--cache-to).
  virtual bool writes() const = 0;
  // Writes the entry for `key`: the blob mounted from `from` (a hit of this build, on
  // the same registry), else from local_file() (which may download it once). An entry
  // already there for the key is kept.
  virtual void store(CacheEntryKind kind, const std::string& key, const BlobInfo& info, const nlohmann::json& extra,
                     const std::function<fs::path()>& local_file, const RemoteHit* from) = 0;
  // Waits for the stores still under way (they may run while later layers build).
  virtual void flush() {}
  // Where store() put (or found) a blob: (registry, repository), for a push to mount it.
  virtual std::optional<std::pair<std::string, std::string>> stored_at(const oci::Digest&) const {
    return std::nullopt;
  }
};

// How get_or_build found a layer.
enum class Found { built, local, remote };

// The files of a stat-keyed layer whose stat data cannot vouch for their content
// (racily clean: layers::racily_clean), each with the SHA-256 of its bytes as the
// walk found them. A key file keeps the checks of the build that wrote it; a later hit
// on that key holds only when every such file still has those bytes, and its key file
// then takes the checks of the hit's own walk (files that have aged out are dropped).
struct ContentCheck {
  std::string path;
  std::string sha256;
  bool operator==(const ContentCheck&) const = default;
};
using ContentChecks = std::vector<ContentCheck>;

class LayerCache {
public:
  explicit LayerCache(fs::path dir, DebugLog debug = {});
  const fs::path& dir() const { return m_dir; }
  // Every path under the cache directory (its layout).
  const CacheLayout& layout() const { return m_layout; }
  oci::BlobStore& blobs() { return m_blobs; }
  // A shared lock held for the duration of a build.
  std::unique_ptr<util::FileLock> use();
  // The blob for key, if cached and its blob is present (and of the recorded size).
  // `extra` receives the JSON stored beside the blob (e.g. a wheel inventory).
  std::optional<BlobInfo> lookup(const std::string& key, nlohmann::json* extra = nullptr);
  // Looks up key under its lock; on a miss runs produce(tmp, record) which writes the
  // blob into tmp, fills the record and returns the blob's info, then commits blob and
  // key. `rebuilt` tells which; `record` is what was stored beside the blob.
  BlobInfo get_or_build(const std::string& key,
                        const std::function<BlobInfo(util::AtomicFile&, LayerRecord& record)>& produce, bool& rebuilt,
                        LayerRecord& record);
  // The same with a second place to look (set_remote): `portable` gives the layer's
  // portable key (called only when the remote is used; the key file keeps it, so a
  // local hit does not compute it again). A remote hit's blob stays in the registry
  // until local_blob() needs it. `found` says where the layer came from.
  // `checks` (when not null) are the racily clean files of the layer's walk, read when
  // the key file is written (after produce(), which may set them).
  BlobInfo get_or_build(const std::string& key, const std::function<std::string()>& portable,
                        const std::function<BlobInfo(util::AtomicFile&, LayerRecord& record)>& produce, Found& found,
                        LayerRecord& record, const ContentChecks* checks = nullptr);
  // The registry cache looked at on a local miss (null: none). Not owned.
  void set_remote(RemoteCache* remote) { m_remote = remote; }
  // A layer taken from a registry entry keeps its origin in its key file (the
  // repository, and whether the entry's signature was verified). With `only_verified`
  // (a build that verifies cache entries or signs its image), a local copy of an
  // unverified entry is not used: the layer is built again, `notice` says so. A local
  // copy of an unverified entry is never stored to a registry cache.
  void set_only_verified(bool only_verified, DebugLog notice) {
    m_only_verified = only_verified;
    m_notice = std::move(notice);
  }
  // With `now` (a build whose outputs need the blobs here: a local output, a signed
  // build's SBOM), a registry hit's blob is downloaded when it is found and checked
  // against its record (layers::blob_mismatch): a damaged entry is then a miss, with a
  // notice, and the layer is built. Else it stays in the registry (a push mounts it) and
  // local_blob() downloads and checks it if it is needed after all (a mismatch is then
  // an Error(integrity)).
  void set_download_hits(bool now) { m_download_hits = now; }
  RemoteCache* remote() const { return m_remote; }
  // The remote entry a layer of this build came from, when its blob is not local yet.
  std::optional<RemoteHit> remote_hit(const oci::Digest& d);
  // Where a layer this build took from the registry came from (downloaded since or not,
  // or a local copy of a registry entry that an earlier build took).
  std::optional<RemoteHit> remote_origin(const oci::Digest& d);
  // A local file with the blob: the cache's, downloaded once from its remote entry
  // (and its key file written) when it came from the registry. Thread-safe.
  fs::path local_blob(const oci::Digest& d);
  // The same with the record in its stored (JSON) form.
  BlobInfo get_or_build(const std::string& key,
                        const std::function<BlobInfo(util::AtomicFile&, nlohmann::json& extra)>& produce, bool& rebuilt,
                        nlohmann::json& extra);
  // Drops least recently used layers until the cache holds at most max_bytes.
  PruneResult prune(std::int64_t max_bytes);
  std::int64_t size_bytes() const;

private:
  using ExtraReader = std::function<void(const nlohmann::json& extra)>;
  struct Pending {   // a remote hit (m_hits) whose blob is not here yet
    std::string key; // the local key, written once the blob is here
    std::string portable_key;
    ContentChecks checks;
  };
  // A remote hit: its record read (which may throw: then a miss), kept as pending.
  std::optional<BlobInfo> take_remote(const std::string& key, const std::string& portable_key, const ExtraReader& read,
                                      const ContentChecks& checks);
  void store_remote(const std::string& portable_key, const BlobInfo& info, const nlohmann::json& extra,
                    const RemoteHit* from);
  // Downloads a hit's blob into the blob store, checked against its record; the
  // mismatch ("" none), the blob not kept then.
  std::string download_checked(const RemoteHit& hit);
  void write_key(const std::string& key, const BlobInfo& info, const nlohmann::json& extra,
                 const std::string& portable_key, const ContentChecks& checks = {}, const RemoteHit* origin = nullptr);
  using Producer = std::function<BlobInfo(util::AtomicFile&, nlohmann::json& extra)>;
  fs::path key_path(const std::string& key) const;
  // The blob for key, its stored extra handed to read (which may throw: then a miss).
  // `portable_key` (when not null) receives the portable key stored with it ("" if none).
  // `stored_checks` (when not null) receives the key file's content checks; a hit holds
  // only when every file they name still has its recorded bytes.
  // `origin` (when not null) receives the registry entry the blob came from, if it did.
  std::optional<BlobInfo> find(const std::string& key, const ExtraReader& read, std::string* portable_key = nullptr,
                               ContentChecks* stored_checks = nullptr, std::optional<RemoteHit>* origin = nullptr);
  BlobInfo get_or_build_locked(const std::string& key, const std::function<std::string()>& portable,
                               const Producer& produce, Found& found, nlohmann::json& extra, const ExtraReader& read,
                               const ContentChecks* checks = nullptr);
  fs::path m_dir;
  CacheLayout m_layout;
  oci::BlobStore m_blobs;
  DebugLog m_debug;
  RemoteCache* m_remote = nullptr;
  bool m_only_verified = false;
  bool m_download_hits = false;
  DebugLog m_notice;
  std::mutex m_pending_mutex;
  std::map<std::string, Pending> m_pending; // digest -> a remote hit not yet downloaded
  std::map<std::string, RemoteHit> m_hits;  // digest -> every remote hit of this build
};

// A file fetched once into the cache as a blob under `key` (a download the build
// needs as it is: a wheel, a .deb). On a miss, download(write, restart) streams it
// (restart: the source sends it whole again after a cut; what was written so far is
// dropped), hashed while written; check(sha256_hex, size) may throw before anything is
// committed. `fetched` says whether it was downloaded now.
using DownloadSink = std::function<void(const char*, std::size_t)>;
BlobInfo
cached_download(LayerCache& cache, const std::string& key, const std::string& media_type,
                const std::function<void(const DownloadSink& write, const std::function<void()>& restart)>& download,
                const std::function<void(const std::string& sha256, std::int64_t size)>& check, bool& fetched);

} // namespace layers
