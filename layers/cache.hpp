#pragma once
// The layer cache: layer input key -> compressed blob. Shared by parallel builds
// (flock): builds hold a shared lock on the cache, a per-key exclusive lock while
// producing a layer; `cache prune` takes the cache lock exclusively.
#include "layers/compress.hpp"
#include "oci/layout.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace layers {

namespace fs = std::filesystem;

struct PruneResult {
  std::int64_t bytes_before = 0;
  std::int64_t bytes_after = 0;
  std::size_t layers_removed = 0;
  std::size_t blobs_removed = 0;
};

class LayerCache {
public:
  explicit LayerCache(fs::path dir);
  const fs::path& dir() const { return m_dir; }
  oci::BlobStore& blobs() { return m_blobs; }
  // A shared lock held for the duration of a build.
  std::unique_ptr<util::FileLock> use();
  // The blob for key, if cached and its blob is present (and of the recorded size).
  // `extra` receives the JSON stored beside the blob (e.g. a wheel inventory).
  std::optional<BlobInfo> lookup(const std::string& key, nlohmann::json* extra = nullptr);
  // Looks up key under its lock; on a miss runs produce(tmp) which writes the blob
  // into tmp and returns its info, then commits blob and key. `rebuilt` tells which.
  BlobInfo get_or_build(const std::string& key,
                        const std::function<BlobInfo(util::AtomicFile&, nlohmann::json& extra)>& produce, bool& rebuilt,
                        nlohmann::json& extra);
  // Drops least recently used layers until the cache holds at most max_bytes.
  PruneResult prune(std::int64_t max_bytes);
  std::int64_t size_bytes() const;

private:
  fs::path key_path(const std::string& key) const;
  fs::path m_dir;
  oci::BlobStore m_blobs;
};

} // namespace layers
