#include "builder/registry_cache.hpp"

#include "imageio/destination.hpp"
#include "imageio/publish.hpp"
#include "layers/compress.hpp"
#include "oci/types.hpp"
#include "registry/error.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <unistd.h>

namespace builder {

using nlohmann::json;
using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t k_max_record = 64 << 20; // a wheels layer's tree of 100,000 directories fits
constexpr std::size_t k_head_bytes = 64 << 10;  // of a hit's blob, for the check of its format
const std::string k_empty_bytes = "{}";

oci::Descriptor descriptor(const std::string& media_type, const std::string& bytes) {
  return oci::Descriptor{
      media_type, oci::Digest::sha256(util::sha256_hex(bytes)), static_cast<std::int64_t>(bytes.size()), {}, {}};
}

json descriptor_json(const std::string& media_type, const oci::Digest& d, std::int64_t size) {
  return {{"mediaType", media_type}, {"digest", d.str()}, {"size", size}};
}

// The record blob: everything the build keeps for the entry, and what it is for.
std::string record_bytes(layers::CacheEntryKind kind, const std::string& key, const json& versions,
                         const layers::BlobInfo& info, const json& extra) {
  return oci::canonical({{"format", 1},
                         {"kind", layers::entry_kind_name(kind)},
                         {"key", key},
                         {"versions", versions},
                         {"blob", layers::to_json(info)},
                         {"record", extra}});
}

// The entry's manifest: the artifact form, or (fallback) a config type registries accept.
std::string manifest_bytes(layers::CacheEntryKind kind, const std::string& key, const layers::BlobInfo& info,
                           const oci::Descriptor& record, const std::string& signature, const std::string& signer,
                           bool fallback) {
  json config = descriptor_json(fallback ? k_cache_config_type : k_empty_type,
                                oci::Digest::sha256(util::sha256_hex(k_empty_bytes)), 2);
  if (!fallback) {
    config["data"] = "e30="; // the empty descriptor carries its two bytes
  }
  json annotations = {{k_cache_kind_annotation, layers::entry_kind_name(kind)}, {k_cache_key_annotation, key}};
  if (!signature.empty()) {
    annotations[k_cache_signature_annotation] = signature;
    annotations[k_cache_signer_annotation] = signer;
  }
  json m = {{"schemaVersion", 2},
            {"mediaType", oci::media::k_manifest},
            {"config", config},
            {"layers", json::array({descriptor_json(info.media_type, info.digest, info.size),
                                    descriptor_json(k_cache_record_type, record.digest, record.size)})},
            {"annotations", annotations}};
  if (!fallback) {
    m["artifactType"] = k_cache_artifact_type;
  }
  return oci::canonical(m);
}

oci::Reader string_reader(std::shared_ptr<const std::string> data, std::int64_t offset) {
  auto pos = std::make_shared<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(0, offset)));
  return [data = std::move(data), pos](char* buf, std::size_t len) {
    std::size_t n = std::min(len, data->size() - std::min(*pos, data->size()));
    std::copy_n(data->data() + *pos, n, buf);
    *pos += n;
    return n;
  };
}

// One entry as an image the destination model writes: the manifest, the empty config,
// the record, and the blob (mounted from the hit it came from, else a local file).
class EntryImage : public oci::Image {
public:
  EntryImage(std::string name, oci::ManifestBlob root, const std::string& record, oci::Descriptor blob,
             std::function<fs::path()> local_file, const layers::RemoteHit* from)
      : m_name(std::move(name)), m_root(std::move(root)), m_record(std::make_shared<std::string>(record)),
        m_record_digest(oci::Digest::sha256(util::sha256_hex(record))), m_blob(std::move(blob)),
        m_local_file(std::move(local_file)), m_from(from) {}
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor&) const override { return m_root; }
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override {
    if (d.digest == m_blob.digest) {
      return util::file_reader(m_local_file(), offset);
    }
    return string_reader(d.digest == m_record_digest ? m_record : std::make_shared<std::string>(k_empty_bytes), offset);
  }
  oci::BlobHints hints(const oci::Descriptor& d) const override {
    oci::BlobHints h;
    if (d.digest != m_blob.digest) {
      return h;
    }
    if (m_from != nullptr) {
      h.registry = m_from->registry;
      h.repository = m_from->repository;
      h.verified = false;
      return h;
    }
    h.file = m_local_file();
    return h;
  }

private:
  std::string m_name;
  oci::ManifestBlob m_root;
  std::shared_ptr<const std::string> m_record;
  oci::Digest m_record_digest;
  oci::Descriptor m_blob;
  std::function<fs::path()> m_local_file;
  const layers::RemoteHit* m_from;
};

// The entry under the manifest `m`, checked against the tag it was found under.
CacheEntry check_entry(registry::Registry& reg, const std::string& repo, const std::string& tag,
                       const oci::ManifestBlob& m) {
  json j = oci::parse_json(m.bytes, "cache entry " + tag);
  const json& ls = j.at("layers");
  if (!ls.is_array() || ls.size() != 2 || ls[1].at("mediaType").get<std::string>() != k_cache_record_type) {
    throw Error(ErrorKind::input, "not a paddle-image cache entry (its layers are not [blob, record])");
  }
  oci::Descriptor record_d = oci::descriptor_from_json(ls[1]);
  oci::Descriptor blob_d = oci::descriptor_from_json(ls[0]);
  CacheEntry e;
  e.record_bytes = reg.read_blob(repo, record_d, k_max_record);
  json record = oci::parse_json(e.record_bytes, "cache record of " + tag);
  e.tag = tag;
  e.manifest = m.digest;
  const std::string kind = record.at("kind").get<std::string>();
  std::optional<layers::CacheEntryKind> known = layers::parse_entry_kind(kind);
  if (!known) {
    throw Error(ErrorKind::input,
                "its record is of kind '" + util::escape_bytes(kind) + "', which no paddle-image writes");
  }
  e.kind = *known;
  e.key = record.at("key").get<std::string>();
  e.versions = record.at("versions");
  e.blob = layers::blob_info_from_json(record.at("blob"));
  e.record = record.at("record");
  const json ann = j.value("annotations", json::object());
  e.signature = ann.value(k_cache_signature_annotation, std::string());
  if (cache_tag(e.kind, e.key, e.versions) != tag) {
    throw Error(ErrorKind::integrity, "its record is for another key (" + kind + " " + e.key +
                                          "): an entry re-tagged under this key is refused");
  }
  if (e.blob.digest != blob_d.digest || e.blob.size != blob_d.size) {
    throw Error(ErrorKind::integrity,
                "its record names blob " + e.blob.digest.str() + ", its manifest " + blob_d.digest.str());
  }
  return e;
}

// Whether the entry's signature (over its record's bytes, read once by check_entry)
// verifies with `key`.
bool signature_verifies(const CacheEntry& e, const signing::PublicKey& key) {
  std::string der;
  return e.is_signed() && util::base64_decode(e.signature, der) && key.verify(e.record_bytes, der);
}

std::string repo_name(const oci::ImageRef& r) {
  return r.registry + "/" + r.repository;
}

} // namespace

json cache_versions(const std::string& tool_version) {
  return {{"paddle-image", tool_version}, {"zlib", layers::zlib_library_version()}, {"zstd", layers::zstd_version()}};
}

std::string cache_tag(layers::CacheEntryKind kind, const std::string& key, const json& versions) {
  std::string prefix = kind == layers::CacheEntryKind::base_view ? "view-" : "layer-";
  return prefix +
         util::sha256_hex(std::string(layers::entry_kind_name(kind)) + "\n" + key + "\n" + oci::canonical(versions));
}

oci::ImageRef parse_cache_repository(const std::string& text, const std::string& flag) {
  oci::ImageRef r;
  try {
    r = oci::ImageRef::parse(text);
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, flag + " " + text + ": " + e.what(), "name a registry repository: HOST/PATH");
  }
  if (r.kind != oci::ImageRef::Kind::registry || !r.digest.empty() || !r.tag_defaulted) {
    throw Error(ErrorKind::usage, flag + " " + text + ": a cache is a registry repository, without a tag or digest",
                "e.g. " + flag + " registry.example.com/team/app/cache");
  }
  r.tag.clear();
  return r;
}

json RegistryCacheStats::to_json() const {
  return {{"hits", hits},       {"misses", misses},   {"stored", stored},
          {"present", present}, {"skipped", skipped}, {"warnings", warnings}};
}

RegistryCache::RegistryCache(RegistryCacheOptions options)
    : m_options(std::move(options)),
      m_signer(m_options.sign_key ? m_options.sign_key->public_key().fingerprint() : std::string()),
      m_verify_flag("--cache-verify-key") {
  if (m_options.sign_key && !m_options.verify_key) {
    m_options.verify_key = m_options.sign_key->public_key();
    m_verify_flag = "--cache-sign-key's public key (a signing writer uses only entries it can verify)";
  }
}

RegistryCacheStats RegistryCache::stats() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_stats;
}

void RegistryCache::warn(const std::string& line) {
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_stats.warnings.push_back(line);
  }
  m_options.warn("warning: " + line);
}

std::shared_ptr<registry::Registry> RegistryCache::quick(const std::string& host) {
  return m_options.lookup_connect ? m_options.lookup_connect(host) : m_options.connect(host);
}

bool RegistryCache::is_down(const oci::ImageRef& repo) {
  std::lock_guard<std::mutex> g(m_mutex);
  if (m_down.count(repo.registry) == 0 && m_down.count(repo_name(repo)) == 0) {
    return false;
  }
  ++m_stats.skipped;
  return true;
}

bool RegistryCache::mark_down(const oci::ImageRef& repo, const Error& e, const std::string& doing) {
  std::string what;
  const auto* re = dynamic_cast<const registry::RegistryError*>(&e);
  if (e.kind() == ErrorKind::network) {
    what = repo.registry; // no answer at all: the host
  } else if (re != nullptr && (re->status() >= 500 || re->status() == 429 || e.kind() == ErrorKind::auth)) {
    what = repo_name(repo);
  } else {
    return false;
  }
  {
    std::lock_guard<std::mutex> g(m_mutex);
    if (!m_down.insert(what).second) {
      return true; // another thread's failure said it already
    }
  }
  warn("registry cache " + what + ": " + doing + " failed (" + e.what() + "); not asked again in this build");
  return true;
}

namespace {

// The entry whose manifest a HEAD of `tag` found: GET by its digest, then checked.
CacheEntry read_entry_at(registry::Registry& reg, const std::string& repo, const std::string& tag,
                         const oci::Descriptor& head) {
  return check_entry(reg, repo, tag, reg.get_manifest(repo, head.digest.str()));
}

} // namespace

std::optional<CacheEntry> read_cache_entry(registry::Registry& reg, const std::string& repo, const std::string& tag) {
  std::optional<oci::Descriptor> head = reg.head_manifest(repo, tag); // HEAD first: GETs count against pull limits
  if (!head) {
    return std::nullopt;
  }
  return read_entry_at(reg, repo, tag, *head);
}

std::optional<layers::RemoteHit> RegistryCache::fetch_from(const oci::ImageRef& repo, layers::CacheEntryKind kind,
                                                           const std::string& key, const std::string& tag) {
  std::string where = repo_name(repo) + ":" + tag;
  try {
    auto reg = quick(repo.registry);
    std::optional<CacheEntry> found = read_cache_entry(*reg, repo.repository, tag);
    if (!found) {
      return std::nullopt;
    }
    const CacheEntry& e = *found;
    if (e.kind != kind || e.key != key) {
      throw Error(ErrorKind::integrity, "its record is for another key: refused");
    }
    bool verified = false;
    if (m_options.verify_key) {
      if (!e.is_signed()) {
        warn("registry cache " + where + ": the entry is not signed; ignored (verified with " + m_verify_flag + ")");
        return std::nullopt;
      }
      if (!signature_verifies(e, *m_options.verify_key)) {
        warn("registry cache " + where + ": the entry's signature does not verify with the " + m_verify_flag +
             "; ignored");
        return std::nullopt;
      }
      verified = true;
    }
    std::optional<std::int64_t> size = reg->blob_size(repo.repository, e.blob.digest);
    if (!size || *size != e.blob.size) {
      warn("registry cache " + where + ": its blob " + e.blob.digest.str() +
           (size ? " has " + std::to_string(*size) + " bytes, not " + std::to_string(e.blob.size) : " is missing") +
           "; ignored, the layer is built");
      return std::nullopt;
    }
    if (kind == layers::CacheEntryKind::layer) { // a view's blob is a file tree of its own format, read when it is used
      // The start of the blob, against the record's media type: the wrong format would
      // give an image that no runtime unpacks (the rest is checked when downloaded).
      std::string head = reg->read_blob_head(repo.repository, e.blob.digest, k_head_bytes);
      if (std::string why = layers::blob_head_mismatch(head, e.blob.media_type); !why.empty()) {
        warn("registry cache " + where + ": its blob " + e.blob.digest.str() + " does not match its record: " + why +
             "; ignored, the layer is built");
        return std::nullopt;
      }
    }
    layers::RemoteHit hit;
    hit.info = e.blob;
    hit.extra = e.record;
    hit.registry = repo.registry;
    hit.repository = repo.repository;
    hit.verified = verified;
    return hit;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::interrupted) {
      throw;
    }
    if (!mark_down(repo, e, "looking up " + tag)) {
      warn("registry cache " + where + ": cannot read the entry (" + e.what() + "); the layer is built");
    }
    return std::nullopt;
  }
}

std::optional<layers::RemoteHit> RegistryCache::fetch(layers::CacheEntryKind kind, const std::string& key) {
  std::string tag = cache_tag(kind, key, m_options.versions);
  for (const auto& repo : m_options.from) {
    if (is_down(repo)) {
      continue;
    }
    if (auto hit = fetch_from(repo, kind, key, tag)) {
      std::lock_guard<std::mutex> g(m_mutex);
      ++m_stats.hits;
      return hit;
    }
  }
  std::lock_guard<std::mutex> g(m_mutex);
  ++m_stats.misses;
  return std::nullopt;
}

void RegistryCache::download(const layers::RemoteHit& hit, util::AtomicFile& tmp) {
  auto reg = m_options.connect(hit.registry);
  oci::Descriptor d{hit.info.media_type, hit.info.digest, hit.info.size, {}, {}};
  reg->download_into(hit.repository, d, tmp, m_options.copy.progress);
}

std::string RegistryCache::check(const layers::RemoteHit& hit) {
  auto reg = m_options.connect(hit.registry);
  oci::Descriptor d{hit.info.media_type, hit.info.digest, hit.info.size, {}, {}};
  auto check = std::make_unique<layers::BlobCheck>(hit.info);
  reg->fetch_blob(
      hit.repository, d, 0, [&](const char* p, std::size_t n) { check->write(p, n); },
      [&] { check = std::make_unique<layers::BlobCheck>(hit.info); }, m_options.copy.progress);
  return check->finish();
}

void RegistryCache::store(layers::CacheEntryKind kind, const std::string& key, const layers::BlobInfo& info,
                          const json& extra, const std::function<fs::path()>& local_file,
                          const layers::RemoteHit* from) {
  std::optional<layers::RemoteHit> hit;
  if (from != nullptr) {
    hit = *from;
  }
  std::string tag = cache_tag(kind, key, m_options.versions);
  // Where nothing needs asking, settled now: no thread, no connection.
  std::vector<oci::ImageRef> ask;
  for (const auto& repo : m_options.to) {
    if (is_down(repo)) {
      continue;
    }
    const bool from_here = from != nullptr && from->registry == repo.registry && from->repository == repo.repository;
    if (from != nullptr && !from->verified) {
      // Nobody checked these bytes against their inputs, and no key vouched for them: an
      // unverified entry is never stored again, nor signed (that would launder it).
      if (from_here) {
        settle(repo, tag, info, true, false); // it is there: where it came from
      } else {
        m_options.debug("registry cache " + repo_name(repo) + ":" + tag +
                        ": not stored; the layer came from an unverified entry at " + from->registry + "/" +
                        from->repository);
      }
    } else if (from_here) {
      settle(repo, tag, info, true); // this build's hit came from there, checked
    } else if (remembered(repo, tag, info)) {
      settle(repo, tag, info, true, false); // settled there lately (a no-change rebuild stays off the network)
    } else {
      ask.push_back(repo);
    }
  }
  if (ask.empty()) {
    return;
  }
  auto job = [this, ask, tag, kind, key, info, extra, local_file, hit] {
    for (const auto& repo : ask) {
      store_to(repo, tag, kind, key, info, extra, local_file, hit ? &*hit : nullptr);
    }
  };
  std::lock_guard<std::mutex> g(m_store_mutex);
  m_queued.push_back(std::move(job)); // written by flush(), once the layers are built
}

void RegistryCache::flush() {
  std::vector<std::function<void()>> queued;
  {
    std::lock_guard<std::mutex> g(m_store_mutex);
    queued = std::move(m_queued);
    m_queued.clear();
  }
  // At most copy.jobs at once; after an interruption, no new one starts.
  const std::size_t most = static_cast<std::size_t>(std::max(1, m_options.copy.jobs));
  std::vector<std::future<void>> running;
  std::exception_ptr first;
  auto take = [&](std::future<void>& f) {
    try {
      f.get(); // only an interruption escapes store_to
    } catch (...) {
      if (!first) {
        first = std::current_exception();
      }
    }
  };
  for (auto& job : queued) {
    if (running.size() >= most) {
      take(running.front());
      running.erase(running.begin());
    }
    if (first) {
      break;
    }
    running.push_back(std::async(std::launch::async, std::move(job)));
  }
  for (auto& f : running) {
    take(f);
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

RegistryCache::~RegistryCache() {
  try {
    flush();
  } catch (...) { // NOLINT(bugprone-empty-catch): the build is unwinding from an interruption already
  }
}

RegistryCache::There RegistryCache::entry_there(registry::Registry& reg, const std::string& repo,
                                                const std::string& tag, const layers::BlobInfo& info,
                                                const std::function<oci::Digest(bool fallback)>& ours) {
  std::optional<oci::Descriptor> head = reg.head_manifest(repo, tag);
  if (!head) {
    return There::none;
  }
  // Unsigned entries are deterministic: the same digest is the same entry (a HEAD says it).
  if (!m_options.sign_key && (head->digest == ours(false) || head->digest == ours(true))) {
    return There::same;
  }
  CacheEntry e = read_entry_at(reg, repo, tag, *head);
  if (e.blob.digest != info.digest) {
    return There::other;
  }
  if (!m_options.sign_key) {
    return There::same; // the same blob, written by another version of this entry's form
  }
  return signature_verifies(e, m_options.sign_key->public_key()) ? There::same : There::other;
}

void RegistryCache::settle(const oci::ImageRef& repo, const std::string& tag, const layers::BlobInfo& info,
                           bool present, bool remember) {
  {
    std::lock_guard<std::mutex> g(m_mutex);
    ++(present ? m_stats.present : m_stats.stored);
    m_homes.emplace(info.digest.str(), std::make_pair(repo.registry, repo.repository));
  }
  if (!remember || m_options.state_dir.empty()) {
    return;
  }
  // Advisory: a marker lost or torn is only a question asked again, so no fsync.
  fs::path path = marker(repo, tag);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + util::sha256_hex(tag + info.digest.str()).substr(0, 8);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << marker_text(info);
    if (!f) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
  }
}

void RegistryCache::ensure_empty_blob(registry::Registry& reg, const oci::ImageRef& repo) {
  std::lock_guard<std::mutex> g(m_empty_mutex);
  std::string name = repo_name(repo);
  if (m_empty_there.count(name) != 0) {
    return;
  }
  oci::Descriptor d = descriptor(k_empty_type, k_empty_bytes);
  if (!reg.blob_size(repo.repository, d.digest)) {
    auto bytes = std::make_shared<const std::string>(k_empty_bytes);
    reg.upload_blob(repo.repository, d, [bytes](std::int64_t offset) { return string_reader(bytes, offset); });
  }
  m_empty_there.insert(name);
}

fs::path RegistryCache::marker(const oci::ImageRef& repo, const std::string& tag) const {
  return m_options.state_dir / util::sha256_hex(repo_name(repo)) / tag;
}

std::string RegistryCache::marker_text(const layers::BlobInfo& info) const {
  return info.digest.str() + " " + m_signer + "\n";
}

bool RegistryCache::remembered(const oci::ImageRef& repo, const std::string& tag, const layers::BlobInfo& info) const {
  if (m_options.state_dir.empty()) {
    return false;
  }
  fs::path path = marker(repo, tag);
  std::error_code ec;
  auto mtime = fs::last_write_time(path, ec);
  if (ec) {
    return false;
  }
  auto age = std::chrono::duration_cast<std::chrono::seconds>(fs::file_time_type::clock::now() - mtime).count();
  if (age < 0 || age > k_stored_marker_ttl_seconds) {
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return text == marker_text(info);
}

std::optional<std::pair<std::string, std::string>> RegistryCache::stored_at(const oci::Digest& d) const {
  std::lock_guard<std::mutex> g(m_mutex);
  auto it = m_homes.find(d.str());
  if (it == m_homes.end()) {
    return std::nullopt;
  }
  return it->second;
}

void RegistryCache::store_to(const oci::ImageRef& repo, const std::string& tag, layers::CacheEntryKind kind,
                             const std::string& key, const layers::BlobInfo& info, const json& extra,
                             const std::function<fs::path()>& local_file, const layers::RemoteHit* from) {
  if (is_down(repo)) {
    return;
  }
  std::string where = repo_name(repo) + ":" + tag;
  std::string record = record_bytes(kind, key, m_options.versions, info, extra);
  oci::Descriptor record_d = descriptor(k_cache_record_type, record);
  std::string signature;
  if (m_options.sign_key) {
    signature = util::base64_encode(m_options.sign_key->sign(record));
  }
  bool existed = false;
  try {
    auto reg = quick(repo.registry);
    There there = entry_there(*reg, repo.repository, tag, info, [&](bool fallback) {
      std::string bytes = manifest_bytes(kind, key, info, record_d, signature, m_signer, fallback);
      return oci::Digest::sha256(util::sha256_hex(bytes));
    });
    if (there == There::same) {
      settle(repo, tag, info, true);
      return;
    }
    existed = there == There::other;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::interrupted) {
      throw;
    }
    if (mark_down(repo, e, "checking " + tag)) {
      return;
    }
    existed = true; // damaged or unreadable: written again below
    m_options.debug("registry cache " + where + ": the entry there is not usable (" + e.what() + "); writing it");
  }
  const layers::RemoteHit* mount = from != nullptr && from->registry == repo.registry ? from : nullptr;
  oci::Descriptor blob_d{info.media_type, info.digest, info.size, {}, {}};
  // Written as any image is (imageio::publish): one destination, the entry's tag.
  imageio::PublishOptions po;
  po.push = m_options.copy;
  po.push.attachments = false;
  po.connect = m_options.connect;
  bool retried = false;
  for (int form = 0; form < 2; ++form) {
    const bool fallback = form == 1;
    std::string bytes = manifest_bytes(kind, key, info, record_d, signature, m_signer, fallback);
    oci::ManifestBlob root{oci::media::k_manifest, bytes, oci::Digest::sha256(util::sha256_hex(bytes))};
    EntryImage image(where, root, record, blob_d, local_file, mount);
    oci::ImageRef dest = repo;
    dest.tag = tag;
    dest.tag_defaulted = false;
    try {
      ensure_empty_blob(*m_options.connect(repo.registry), repo);
      imageio::publish(image, {dest}, po);
      settle(repo, tag, info, false);
      return;
    } catch (const registry::RegistryError& e) {
      if (!retried && e.has_code("MANIFEST_BLOB_UNKNOWN")) {
        // Stores run side by side and share small blobs (the `{}` config): another store's
        // upload of one raced ours (distribution answers DIGEST_INVALID and
        // MANIFEST_BLOB_UNKNOWN). Once more: the blob is there by now, or uploaded again.
        retried = true;
        --form;
        continue;
      }
      if (!fallback &&
          (e.status() == 415 || (e.status() == 400 && (e.has_code("MANIFEST_INVALID") || e.has_code("UNSUPPORTED"))))) {
        // A registry without OCI 1.1 artifacts (an artifactType, the empty config type).
        m_options.debug("registry cache " + where + ": the registry refused the artifact manifest (" + e.what() +
                        "); writing the fallback form");
        continue;
      }
      if (existed && (e.status() == 400 || e.status() == 409)) {
        // An immutable tag the registry will not overwrite: another writer got there first
        // (what it wrote is not known: not remembered).
        settle(repo, tag, info, true, false);
        return;
      }
      if (e.has_code(registry::codes::k_name_unknown)) {
        warn("registry cache " + repo_name(repo) + ": the repository does not exist and the registry did not " +
             "create it on push (" + e.what() + "); create it (e.g. `aws ecr create-repository " +
             "--repository-name " + repo.repository + "`), or name another --cache-to");
        return;
      }
      if (!mark_down(repo, e, "writing " + tag)) {
        warn("registry cache " + where + ": not written (" + e.what() + ")");
      }
      return;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::interrupted) {
        throw;
      }
      if (!mark_down(repo, e, "writing " + tag)) {
        warn("registry cache " + where + ": not written (" + e.what() + ")");
      }
      return;
    }
  }
}

CacheListing list_cache(registry::Registry& reg, const std::string& repo) {
  CacheListing out;
  for (const auto& tag : reg.list_tags(repo)) {
    if (tag.rfind("layer-", 0) != 0 && tag.rfind("view-", 0) != 0) {
      continue;
    }
    try {
      if (auto e = read_cache_entry(reg, repo, tag)) {
        out.entries.push_back(*e);
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::interrupted) {
        throw;
      }
      out.damaged.emplace_back(tag, e.what());
    }
  }
  return out;
}

CachePrune prune_cache(registry::Registry& reg, const std::string& repo,
                       const std::vector<std::vector<oci::Digest>>& kept_images, bool dry_run) {
  std::set<std::string> used;
  for (const auto& layers : kept_images) {
    for (const auto& d : layers) {
      used.insert(d.str());
    }
  }
  auto view_kept = [&](const CacheEntry& e) {
    const json& base = e.record.value("layers", json::array());
    return std::any_of(kept_images.begin(), kept_images.end(), [&](const std::vector<oci::Digest>& img) {
      if (base.empty() || base.size() > img.size()) {
        return false;
      }
      for (std::size_t i = 0; i < base.size(); ++i) {
        if (base[i].get<std::string>() != img[i].str()) {
          return false;
        }
      }
      return true;
    });
  };
  CacheListing listing = list_cache(reg, repo);
  CachePrune out;
  out.damaged = listing.damaged;
  for (const auto& e : listing.entries) {
    bool keep = e.kind == layers::CacheEntryKind::base_view ? view_kept(e) : used.count(e.blob.digest.str()) > 0;
    if (keep) {
      out.kept.push_back(e);
      continue;
    }
    if (!dry_run) {
      reg.delete_manifest(repo, e.manifest);
    }
    out.deleted.push_back(e);
  }
  return out;
}

} // namespace builder
