#pragma once
// The layer cache: layer input key -> compressed blob. Shared by parallel builds
// (flock): builds hold a shared lock on the cache, a per-key exclusive lock while
// producing a layer; `cache prune` takes the cache lock exclusively.
#include "layers/compress.hpp"
#include "oci/layout.hpp"

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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
};
nlohmann::json to_json(const LayerRecord& record);
// Throws nlohmann::json::exception on a malformed record.
LayerRecord layer_record_from_json(const nlohmann::json& j);

// A debug-level log line (a sink passed in by the caller; empty: not logged).
using DebugLog = std::function<void(const std::string& line)>;

class LayerCache {
public:
  explicit LayerCache(fs::path dir, DebugLog debug = {});
  const fs::path& dir() const { return m_dir; }
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
  // The same with the record in its stored (JSON) form.
  BlobInfo get_or_build(const std::string& key,
                        const std::function<BlobInfo(util::AtomicFile&, nlohmann::json& extra)>& produce, bool& rebuilt,
                        nlohmann::json& extra);
  // Drops least recently used layers until the cache holds at most max_bytes.
  PruneResult prune(std::int64_t max_bytes);
  std::int64_t size_bytes() const;

private:
  using ExtraReader = std::function<void(const nlohmann::json& extra)>;
  using Producer = std::function<BlobInfo(util::AtomicFile&, nlohmann::json& extra)>;
  fs::path key_path(const std::string& key) const;
  // The blob for key, its stored extra handed to read (which may throw: then a miss).
  std::optional<BlobInfo> find(const std::string& key, const ExtraReader& read);
  BlobInfo get_or_build_locked(const std::string& key, const Producer& produce, bool& rebuilt, nlohmann::json& extra,
                               const ExtraReader& read);
  fs::path m_dir;
  oci::BlobStore m_blobs;
  DebugLog m_debug;
};

} // namespace layers
