#include "layers/cache.hpp"

#include "layers/walk_memo.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace layers {

using nlohmann::json;

json to_json(const BlobInfo& b) {
  return {{"digest", b.digest.str()},
          {"diff_id", b.diff_id.str()},
          {"size", b.size},
          {"uncompressed_size", b.uncompressed_size},
          {"media_type", b.media_type}};
}

BlobInfo blob_info_from_json(const json& j) {
  BlobInfo b;
  b.digest = oci::Digest::parse(j.at("digest").get<std::string>());
  b.diff_id = oci::Digest::parse(j.at("diff_id").get<std::string>());
  b.size = j.at("size").get<std::int64_t>();
  b.uncompressed_size = j.at("uncompressed_size").get<std::int64_t>();
  b.media_type = j.at("media_type").get<std::string>();
  return b;
}

namespace {

// A key file's blob info; its "extra" object is handed to read_extra when given, its
// portable key (for the registry cache) to `portable_key`.
std::optional<BlobInfo> from_json_file(const fs::path& p, const DebugLog& debug,
                                       const std::function<void(const json&)>& read_extra = {},
                                       std::string* portable_key = nullptr, ContentChecks* checks = nullptr,
                                       std::optional<RemoteHit>* origin = nullptr) {
  try {
    json j = json::parse(util::read_file(p));
    if (origin != nullptr) {
      origin->reset();
      if (j.contains("origin")) {
        const json& o = j.at("origin");
        RemoteHit h;
        h.registry = o.at("registry").get<std::string>();
        h.repository = o.at("repository").get<std::string>();
        h.verified = o.at("verified").get<bool>();
        *origin = h;
      }
    }
    if (read_extra) {
      read_extra(j.value("extra", json::object()));
    }
    if (portable_key != nullptr) {
      *portable_key = j.value("portable_key", std::string());
    }
    if (checks != nullptr) {
      checks->clear();
      for (const auto& c : j.value("checks", json::array())) {
        checks->push_back(ContentCheck{c.at(0).get<std::string>(), c.at(1).get<std::string>()});
      }
    }
    return blob_info_from_json(j);
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
  if (record.parts) {
    j["parts"] = *record.parts;
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
  if (j.contains("parts")) {
    r.parts = j.at("parts").get<std::size_t>();
  }
  if (j.contains("tree")) {
    r.tree = j.at("tree");
  }
  return r;
}

const char* entry_kind_name(CacheEntryKind kind) {
  return kind == CacheEntryKind::base_view ? "base-view" : "layer";
}

std::optional<CacheEntryKind> parse_entry_kind(const std::string& name) {
  if (name == "layer") {
    return CacheEntryKind::layer;
  }
  if (name == "base-view") {
    return CacheEntryKind::base_view;
  }
  return std::nullopt;
}

LayerCache::LayerCache(fs::path dir, DebugLog debug)
    : m_dir(std::move(dir)), m_layout(m_dir), m_blobs(m_dir), m_debug(std::move(debug)) {
  std::error_code ec;
  fs::create_directories(m_layout.keys(), ec);
  fs::create_directories(m_layout.locks(), ec);
  fs::create_directories(m_layout.blobs(), ec);
  if (ec) {
    throw util::Error(util::ErrorKind::io, "cannot create cache directory " + m_dir.string() + ": " + ec.message(),
                      "pass a writable --cache-dir");
  }
}

std::unique_ptr<util::FileLock> LayerCache::use() {
  auto lock = std::make_unique<util::FileLock>(m_layout.use_lock(), util::FileLock::Mode::shared);
  m_blobs.remove_stale_temps();
  util::remove_stale_temps(m_layout.staging()); // builds' staging trees (util::TempDir)
  return lock;
}

fs::path LayerCache::key_path(const std::string& key) const {
  return m_layout.key_file(key);
}

std::optional<BlobInfo> LayerCache::lookup(const std::string& key, json* extra) {
  return find(key, [&](const json& e) {
    if (extra != nullptr) {
      *extra = e;
    }
  });
}

std::optional<BlobInfo> LayerCache::find(const std::string& key, const ExtraReader& read, std::string* portable_key,
                                         ContentChecks* stored_checks, std::optional<RemoteHit>* origin) {
  fs::path kp = key_path(key);
  std::error_code ec;
  if (!fs::exists(kp, ec)) {
    return std::nullopt;
  }
  ContentChecks checks;
  auto info = from_json_file(kp, m_debug, read, portable_key, &checks, origin);
  if (!info) {
    return std::nullopt;
  }
  auto size = fs::file_size(m_blobs.blob_path(info->digest), ec);
  if (ec || static_cast<std::int64_t>(size) != info->size) {
    return std::nullopt;
  }
  // Racily clean files when the key was written: their stat data cannot say that
  // their bytes are the same, so the bytes are compared.
  for (const auto& c : checks) {
    std::string now;
    try {
      now = util::sha256_file_hex(c.path);
    } catch (const std::exception&) {
      now.clear(); // gone or unreadable: not the bytes the layer was made of
    }
    if (now != c.sha256) {
      if (m_debug) {
        m_debug("cache: " + c.path +
                " changed since the layer was cached, its stat data did not (racily clean); "
                "rebuilding");
      }
      return std::nullopt;
    }
  }
  if (stored_checks != nullptr) {
    *stored_checks = std::move(checks);
  }
  ::utimensat(AT_FDCWD, kp.c_str(), nullptr, 0); // LRU: mark as used now
  return info;
}

BlobInfo LayerCache::get_or_build(const std::string& key,
                                  const std::function<BlobInfo(util::AtomicFile&, LayerRecord& record)>& produce,
                                  bool& rebuilt, LayerRecord& record) {
  Found found = Found::built;
  BlobInfo info = get_or_build(key, {}, produce, found, record);
  rebuilt = found == Found::built;
  return info;
}

BlobInfo LayerCache::get_or_build(const std::string& key, const std::function<std::string()>& portable,
                                  const std::function<BlobInfo(util::AtomicFile&, LayerRecord& record)>& produce,
                                  Found& found, LayerRecord& record, const ContentChecks* checks) {
  json extra;
  return get_or_build_locked(
      key, portable,
      [&](util::AtomicFile& tmp, json& ex) {
        record = LayerRecord{};
        BlobInfo info = produce(tmp, record);
        ex = to_json(record);
        return info;
      },
      found, extra, [&](const json& stored) { record = layer_record_from_json(stored); }, checks);
}

BlobInfo LayerCache::get_or_build(const std::string& key,
                                  const std::function<BlobInfo(util::AtomicFile&, json& extra)>& produce, bool& rebuilt,
                                  json& extra) {
  Found found = Found::built;
  BlobInfo info = get_or_build_locked(key, {}, produce, found, extra, {});
  rebuilt = found == Found::built;
  return info;
}

void LayerCache::write_key(const std::string& key, const BlobInfo& info, const json& extra,
                           const std::string& portable_key, const ContentChecks& checks, const RemoteHit* origin) {
  json entry = to_json(info);
  entry["extra"] = extra;
  if (!portable_key.empty()) {
    entry["portable_key"] = portable_key;
  }
  if (!checks.empty()) {
    json c = json::array();
    for (const auto& check : checks) {
      c.push_back({check.path, check.sha256});
    }
    entry["checks"] = std::move(c);
  }
  if (origin != nullptr) {
    entry["origin"] = {
        {"registry", origin->registry}, {"repository", origin->repository}, {"verified", origin->verified}};
  }
  util::write_file_atomic(key_path(key), entry.dump());
}

std::optional<BlobInfo> LayerCache::take_remote(const std::string& key, const std::string& portable_key,
                                                const ExtraReader& read, const ContentChecks& checks) {
  std::optional<RemoteHit> hit = m_remote->fetch(CacheEntryKind::layer, portable_key);
  if (!hit) {
    return std::nullopt;
  }
  try {
    if (read) {
      read(hit->extra);
    }
  } catch (const std::exception& e) {
    // Safe: an entry whose record this build cannot read is a miss; the layer is built.
    if (m_debug) {
      m_debug("cache: ignoring the registry entry for " + portable_key + ": " + e.what());
    }
    return std::nullopt;
  }
  if (!m_blobs.has(hit->info.digest) && (m_download_hits || !hit->verified)) {
    // Bytes nobody vouched for are read before they are used: downloaded when the build
    // needs them here, else streamed through the check (a signed entry's writer built or
    // verified its bytes, and its record, signed, names them).
    std::string why = m_download_hits ? download_checked(*hit) : m_remote->check(*hit);
    if (!why.empty()) {
      if (m_notice) {
        m_notice("  the registry cache entry at " + hit->registry + "/" + hit->repository + " is damaged: its blob " +
                 hit->info.digest.str() + " " + why + "; built instead");
      }
      return std::nullopt;
    }
  }
  std::lock_guard<std::mutex> g(m_pending_mutex);
  m_hits[hit->info.digest.hex] = *hit;
  if (m_blobs.has(hit->info.digest)) {
    write_key(key, hit->info, hit->extra, portable_key, checks, &*hit); // the bytes are here already
  } else {
    m_pending[hit->info.digest.hex] = Pending{key, portable_key, checks};
  }
  return hit->info;
}

void LayerCache::store_remote(const std::string& portable_key, const BlobInfo& info, const json& extra,
                              const RemoteHit* from) {
  oci::Digest d = info.digest;
  m_remote->store(
      CacheEntryKind::layer, portable_key, info, extra, [this, d] { return local_blob(d); }, from);
}

BlobInfo LayerCache::get_or_build_locked(const std::string& key, const std::function<std::string()>& portable,
                                         const Producer& produce, Found& found, json& extra, const ExtraReader& read,
                                         const ContentChecks* checks) {
  util::FileLock lock(m_layout.key_lock(key), util::FileLock::Mode::exclusive);
  const bool remote = m_remote != nullptr && portable;
  std::string portable_key;
  auto take = [&](const json& stored) { // a stored record, from the key file or the registry
    if (read) {
      read(stored);
    }
    extra = stored;
  };
  static const ContentChecks k_none;
  const ContentChecks& now_checks = checks != nullptr ? *checks : k_none;
  ContentChecks stored_checks;
  std::optional<RemoteHit> origin;
  auto hit = find(key, take, &portable_key, &stored_checks, &origin);
  if (hit && origin && !origin->verified && m_only_verified) {
    if (m_notice) {
      m_notice("  its cached copy came from an unverified registry cache entry (" + origin->registry + "/" +
               origin->repository + "); built again, since this build verifies cache entries or signs its image");
    }
    hit.reset();
  }
  if (hit) {
    found = Found::local;
    bool rewrite = checks != nullptr && stored_checks != *checks; // files aged out of raciness: dropped
    if (remote && m_remote->writes() && portable_key.empty()) {
      portable_key = portable(); // made before a registry cache was set: its key once, then kept
      rewrite = true;
    }
    if (rewrite) {
      write_key(key, *hit, extra, portable_key, checks != nullptr ? *checks : stored_checks,
                origin ? &*origin : nullptr);
    }
    if (origin) {
      origin->info = *hit;
      origin->extra = extra;
      std::lock_guard<std::mutex> g(m_pending_mutex);
      m_hits.emplace(hit->digest.hex, *origin); // remote_origin() names it; never pending
    }
    if (remote && m_remote->writes()) {
      store_remote(portable_key, *hit, extra, origin ? &*origin : nullptr);
    }
    return *hit;
  }
  if (remote) {
    portable_key = portable();
    if (auto got = take_remote(key, portable_key, take, now_checks)) {
      found = Found::remote;
      if (m_remote->writes()) {
        std::optional<RemoteHit> from = remote_origin(got->digest); // its trust goes with it
        store_remote(portable_key, *got, extra, from ? &*from : nullptr);
      }
      return *got;
    }
  }
  auto tmp = m_blobs.begin_write();
  extra = json::object();
  BlobInfo info = produce(*tmp, extra);
  if (m_blobs.has(info.digest)) {
    // Identical bytes already stored (another key produced the same layer).
  } else {
    m_blobs.commit(*tmp, info.digest);
  }
  write_key(key, info, extra, portable_key, now_checks); // read now: produce() may have set them
  found = Found::built;
  if (remote && m_remote->writes()) {
    store_remote(portable_key, info, extra, nullptr);
  }
  return info;
}

std::optional<RemoteHit> LayerCache::remote_hit(const oci::Digest& d) {
  std::lock_guard<std::mutex> g(m_pending_mutex);
  if (m_pending.count(d.hex) == 0) {
    return std::nullopt;
  }
  return m_hits.at(d.hex);
}

std::optional<RemoteHit> LayerCache::remote_origin(const oci::Digest& d) {
  std::lock_guard<std::mutex> g(m_pending_mutex);
  auto it = m_hits.find(d.hex);
  if (it == m_hits.end()) {
    return std::nullopt;
  }
  return it->second;
}

fs::path LayerCache::local_blob(const oci::Digest& d) {
  std::lock_guard<std::mutex> g(m_pending_mutex);
  fs::path path = m_blobs.blob_path(d);
  auto it = m_pending.find(d.hex);
  if (it == m_pending.end()) {
    return path;
  }
  const RemoteHit& hit = m_hits.at(d.hex);
  if (!m_blobs.has(d)) {
    if (std::string why = download_checked(hit); !why.empty()) {
      throw util::Error(util::ErrorKind::integrity,
                        "the registry cache entry at " + hit.registry + "/" + hit.repository +
                            " is damaged: its blob " + d.str() + " " + why,
                        "delete the entry (paddle-image cache prune, or a new --cache-to) and build again");
    }
  }
  write_key(it->second.key, hit.info, hit.extra, it->second.portable_key, it->second.checks, &hit);
  m_pending.erase(it);
  return path;
}

std::string LayerCache::download_checked(const RemoteHit& hit) {
  auto tmp = m_blobs.begin_write();
  m_remote->download(hit, *tmp);
  std::string why = blob_mismatch(tmp->temp_path(), hit.info);
  if (why.empty()) {
    m_blobs.commit(*tmp, hit.info.digest);
  }
  return why;
}

std::int64_t LayerCache::size_bytes() const {
  std::int64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(m_layout.blobs(), ec), end; !ec && it != end; it.increment(ec)) {
    total += static_cast<std::int64_t>(fs::file_size(it->path(), ec));
  }
  return total;
}

PruneResult LayerCache::prune(std::int64_t max_bytes) {
  util::FileLock lock(m_layout.use_lock(), util::FileLock::Mode::exclusive);
  m_blobs.remove_stale_temps();
  util::remove_stale_temps(m_layout.staging());
  PruneResult r;
  r.bytes_before = size_bytes();
  struct Key {
    fs::path path;
    std::int64_t mtime_ns;
    BlobInfo info;
  };
  std::vector<Key> keys;
  std::error_code ec;
  for (fs::directory_iterator it(m_layout.keys(), ec), end; !ec && it != end; it.increment(ec)) {
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
  for (fs::directory_iterator it(m_layout.blobs(), ec), end; !ec && it != end; it.increment(ec)) {
    if (kept_blobs.count(it->path().filename().string()) == 0) {
      std::error_code rm;
      fs::remove(it->path(), rm);
      ++r.blobs_removed;
    }
  }
  // A walk memo whose layer key went is of no use (it cannot spare a walk any more).
  prune_walk_memos(
      m_layout.walks(),
      [this](const std::string& key) {
        std::error_code rm;
        return fs::exists(key_path(key), rm);
      },
      max_bytes == 0);
  // Downloaded sources as their rules lay them out: made again from their blobs (or
  // downloaded again) by the next build that needs them.
  fs::remove_all(m_layout.sources(), ec);
  ec.clear();
  if (max_bytes == 0) {
    // --all: the base views too (they are rebuilt from the layers), and the per-layer SBOM
    // scans older versions kept under sbom/.
    for (const fs::path& sub : {m_layout.base_views(), m_layout.legacy_sboms()}) {
      for (fs::directory_iterator it(sub, ec), end; !ec && it != end; it.increment(ec)) {
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

BlobInfo
cached_download(LayerCache& cache, const std::string& key, const std::string& media_type,
                const std::function<void(const DownloadSink& write, const std::function<void()>& restart)>& download,
                const std::function<void(const std::string& sha256, std::int64_t size)>& check, bool& fetched) {
  LayerRecord record;
  return cache.get_or_build(
      key,
      [&](util::AtomicFile& tmp, LayerRecord&) {
        util::Sha256 hash;
        std::int64_t size = 0;
        download(
            [&](const char* data, std::size_t len) {
              tmp.write(data, len);
              hash.update(data, len);
              size += static_cast<std::int64_t>(len);
            },
            [&] {
              if (::ftruncate(tmp.fd(), 0) != 0 || ::lseek(tmp.fd(), 0, SEEK_SET) != 0) {
                util::throw_errno("cannot rewind " + tmp.temp_path().string());
              }
              hash.reset();
              size = 0;
            });
        std::string got = hash.finish_hex();
        check(got, size);
        BlobInfo b;
        b.digest = oci::Digest::sha256(got);
        b.diff_id = b.digest;
        b.size = size;
        b.uncompressed_size = size;
        b.media_type = media_type;
        return b;
      },
      fetched, record);
}

} // namespace layers
