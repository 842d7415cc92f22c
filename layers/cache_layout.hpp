#pragma once
// The local cache's directory layout, in one place: every path under the cache
// directory (--cache-dir, PADDLE_IMAGE_CACHE) comes from here (docs/metadata.md, "The cache").
//
//   CACHE/cache.lock              shared by builds, exclusive for a prune
//   CACHE/blobs/sha256/<hex>      every blob (layers, configs, base layers pulled once)
//   CACHE/keys/<key>.json         a layer's record under its key (LayerCache)
//   CACHE/locks/<key>.lock        one builder of a key at a time
//   CACHE/staging/                builds' staging trees (a wheels layer's install)
//   CACHE/walks/<id>              a files or data layer's walk memo (layers/walk_memo)
//   CACHE/sources/<id>/           a downloaded source laid out as its rule copies it (builder/remote_sources)
//   CACHE/base-view/<key>.zst     a list of layers' file tree (layers::cached_view)
//   CACHE/base-info/blobs/<hex>.json  a base blob's stat when its digest was verified
//   CACHE/registry-cache/         the registry cache's local state (builder/registry_cache)
//   CACHE/sbom/                   left by older versions; removed by `cache prune --all`
#include "oci/digest.hpp"

#include <filesystem>
#include <string>

namespace layers {

class CacheLayout {
public:
  explicit CacheLayout(std::filesystem::path root) : m_root(std::move(root)) {}
  const std::filesystem::path& root() const { return m_root; }

  std::filesystem::path use_lock() const { return m_root / "cache.lock"; }
  std::filesystem::path blobs() const { return m_root / "blobs" / "sha256"; }
  std::filesystem::path keys() const { return m_root / "keys"; }
  std::filesystem::path key_file(const std::string& key) const { return keys() / (key + ".json"); }
  std::filesystem::path locks() const { return m_root / "locks"; }
  std::filesystem::path key_lock(const std::string& key) const { return locks() / (key + ".lock"); }
  std::filesystem::path staging() const { return m_root / "staging"; }
  std::filesystem::path walks() const { return m_root / "walks"; }
  std::filesystem::path walk_memo(const std::string& id) const { return walks() / id; }
  std::filesystem::path sources() const { return m_root / "sources"; }
  std::filesystem::path base_views() const { return m_root / "base-view"; }
  std::filesystem::path base_view(const std::string& key) const { return base_views() / (key + ".zst"); }
  std::filesystem::path base_info_blobs() const { return m_root / "base-info" / "blobs"; }
  std::filesystem::path base_info_record(const oci::Digest& blob) const {
    return base_info_blobs() / (blob.hex + ".json");
  }
  std::filesystem::path registry_cache_state() const { return m_root / "registry-cache"; }
  std::filesystem::path legacy_sboms() const { return m_root / "sbom"; }

private:
  std::filesystem::path m_root;
};

} // namespace layers
