#include "layers/cache.hpp"

#include "layers/walk_memo.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <vector>

namespace layers {

using nlohmann::json;

namespace {

json to_json(const BlobInfo& b) {
  return {{"digest", b.digest.str()},
          {"diff_id", b.diff_id.str()},
          {"size", b.size},
          {"uncompressed_size", b.uncompressed_size},
          {"media_type", b.media_type}};
}

// A key file's blob info; its "extra" object is handed to read_extra when given.
std::optional<BlobInfo> from_json_file(const fs::path& p, const DebugLog& debug,
                                       const std::function<void(const json&)>& read_extra = {}) {
  try {
    json j = json::parse(util::read_file(p));
    if (read_extra) {
      read_extra(j.value("extra", json::object()));
    }
    BlobInfo b;
    b.digest = oci::Digest::parse(j.at("digest").get<std::string>());
    b.diff_id = oci::Digest::parse(j.at("diff_id").get<std::string>());
    b.size = j.at("size").get<std::int64_t>();
    b.uncompressed_size = j.at("uncompressed_size").get<std::int64_t>();
    b.media_type = j.at("media_type").get<std::string>();
    return b;
  } catch (const std::exception& e) {
    // Safe: a key file that cannot be read or parsed (an old format, a damaged disk)
    // is a cache miss; the layer is built again and its key file rewritten.
    if (debug) {
      debug("cache: ignoring key file " + p.string() + ": " + e.what());
    }
    return std::nullopt;
  }
}

} // namespace

json to_json(const LayerRecord& record) {
  json j = json::object();
  if (record.entries) {
    j["entries"] = *record.entries;
  }
  if (record.wheels) {
    j["wheels"] = *record.wheels;
  }
  if (record.tree) {
    j["tree"] = *record.tree;
  }
  return j;
}

LayerRecord layer_record_from_json(const json& j) {
  LayerRecord r;
  if (j.contains("entries")) {
    r.entries = j.at("entries").get<std::size_t>();
  }
  if (j.contains("wheels")) {
    // A list (its entries are the build's to read): anything else is a damaged record.
    r.wheels = nlohmann::json(j.at("wheels").get<std::vector<nlohmann::json>>());
  }
  if (j.contains("tree")) {
    r.tree = j.at("tree");
  }
  return r;
}

LayerCache::LayerCache(fs::path dir, DebugLog debug)
    : m_dir(std::move(dir)), m_blobs(m_dir), m_debug(std::move(debug)) {
  std::error_code ec;
  fs::create_directories(m_dir / "keys", ec);
  fs::create_directories(m_dir / "locks", ec);
  fs::create_directories(m_dir / "blobs" / "sha256", ec);
  if (ec) {
    throw util::Error(util::ErrorKind::io, "cannot create cache directory " + m_dir.string() + ": " + ec.message(),
                      "pass a writable --cache-dir");
  }
}

std::unique_ptr<util::FileLock> LayerCache::use() {
  auto lock = std::make_unique<util::FileLock>(m_dir / "cache.lock", util::FileLock::Mode::shared);
  m_blobs.remove_stale_temps();
  util::remove_stale_temps(m_dir / "staging"); // builds' staging trees (util::TempDir)
  return lock;
}

fs::path LayerCache::key_path(const std::string& key) const {
  return m_dir / "keys" / (key + ".json");
}

std::optional<BlobInfo> LayerCache::lookup(const std::string& key, json* extra) {
  return find(key, [&](const json& e) {
    if (extra != nullptr) {
      *extra = e;
    }
  });
}

std::optional<BlobInfo> LayerCache::find(const std::string& key, const ExtraReader& read) {
  fs::path kp = key_path(key);
  std::error_code ec;
  if (!fs::exists(kp, ec)) {
    return std::nullopt;
  }
  auto info = from_json_file(kp, m_debug, read);
  if (!info) {
    return std::nullopt;
  }
  auto size = fs::file_size(m_blobs.blob_path(info->digest), ec);
  if (ec || static_cast<std::int64_t>(size) != info->size) {
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, kp.c_str(), nullptr, 0); // LRU: mark as used now
  return info;
}

BlobInfo LayerCache::get_or_build(const std::string& key,
                                  const std::function<BlobInfo(util::AtomicFile&, LayerRecord& record)>& produce,
                                  bool& rebuilt, LayerRecord& record) {
  json extra;
  return get_or_build_locked(
      key,
      [&](util::AtomicFile& tmp, json& ex) {
        record = LayerRecord{};
        BlobInfo info = produce(tmp, record);
        ex = to_json(record);
        return info;
      },
      rebuilt, extra, [&](const json& stored) { record = layer_record_from_json(stored); });
}

BlobInfo LayerCache::get_or_build(const std::string& key,
                                  const std::function<BlobInfo(util::AtomicFile&, json& extra)>& produce, bool& rebuilt,
                                  json& extra) {
  return get_or_build_locked(key, produce, rebuilt, extra, {});
}

BlobInfo LayerCache::get_or_build_locked(const std::string& key, const Producer& produce, bool& rebuilt, json& extra,
                                         const ExtraReader& read) {
  util::FileLock lock(m_dir / "locks" / (key + ".lock"), util::FileLock::Mode::exclusive);
  auto hit = find(key, [&](const json& stored) {
    if (read) {
      read(stored);
    }
    extra = stored;
  });
  if (hit) {
    rebuilt = false;
    return *hit;
  }
  auto tmp = m_blobs.begin_write();
  extra = json::object();
  BlobInfo info = produce(*tmp, extra);
  if (m_blobs.has(info.digest)) {
    // Identical bytes already stored (another key produced the same layer).
  } else {
    m_blobs.commit(*tmp, info.digest);
  }
  json entry = to_json(info);
  entry["extra"] = extra;
  util::write_file_atomic(key_path(key), entry.dump());
  rebuilt = true;
  return info;
}

std::int64_t LayerCache::size_bytes() const {
  std::int64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(m_dir / "blobs" / "sha256", ec), end; !ec && it != end; it.increment(ec)) {
    total += static_cast<std::int64_t>(fs::file_size(it->path(), ec));
  }
  return total;
}

PruneResult LayerCache::prune(std::int64_t max_bytes) {
  util::FileLock lock(m_dir / "cache.lock", util::FileLock::Mode::exclusive);
  m_blobs.remove_stale_temps();
  util::remove_stale_temps(m_dir / "staging");
  PruneResult r;
  r.bytes_before = size_bytes();
  struct Key {
    fs::path path;
    std::int64_t mtime_ns;
    BlobInfo info;
  };
  std::vector<Key> keys;
  std::error_code ec;
  for (fs::directory_iterator it(m_dir / "keys", ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) {
      continue;
    }
    auto info = from_json_file(it->path(), m_debug);
    if (!info) {
      fs::remove(it->path(), ec);
      continue;
    }
    keys.push_back({it->path(), util::timespec_ns(st.st_mtim), *info});
  }
  // Newest first; keep while the referenced blobs fit.
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.path < b.path;
  });
  std::set<std::string> kept_blobs;
  std::int64_t kept = 0;
  for (const auto& k : keys) {
    bool already = kept_blobs.count(k.info.digest.hex) > 0;
    if (already || kept + k.info.size <= max_bytes) {
      if (!already) {
        kept += k.info.size;
        kept_blobs.insert(k.info.digest.hex);
      }
    } else {
      fs::remove(k.path, ec);
      ++r.layers_removed;
    }
  }
  for (fs::directory_iterator it(m_dir / "blobs" / "sha256", ec), end; !ec && it != end; it.increment(ec)) {
    if (kept_blobs.count(it->path().filename().string()) == 0) {
      std::error_code rm;
      fs::remove(it->path(), rm);
      ++r.blobs_removed;
    }
  }
  // A walk memo whose layer key went is of no use (it cannot spare a walk any more).
  for (fs::directory_iterator it(m_dir / "walks", ec), end; !ec && it != end; it.increment(ec)) {
    std::string key = walk_memo_key(it->path());
    std::error_code rm;
    if (max_bytes == 0 || key.empty() || key.find_first_not_of("0123456789abcdef") != std::string::npos ||
        !fs::exists(key_path(key), rm)) {
      fs::remove(it->path(), rm);
    }
  }
  ec.clear();
  if (max_bytes == 0) {
    // --all: the base views too (they are rebuilt from the layers), and the per-layer SBOM
    // scans older versions kept under sbom/.
    for (const char* sub : {"base-view", "sbom"}) {
      for (fs::directory_iterator it(m_dir / sub, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code rm;
        if (fs::remove(it->path(), rm)) {
          ++r.views_removed;
        }
      }
      ec.clear();
    }
  }
  r.bytes_after = size_bytes();
  return r;
}

} // namespace layers
