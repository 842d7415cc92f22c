// The debs layer: the Debian packages of its lock (builder/debs.hpp, `paddle-image
// lock`), each fetched once into the cache and checked against the lock's SHA-256 and
// size, its data archive laid out with the package's modes and owners (times from
// source_date_epoch, the base's directories keeping their metadata), and dpkg's records
// for it written beside: the status with the base's packages and these, and
// var/lib/dpkg/info. Keyed by the lock's packages and the base's dpkg status, so a
// fresh runner with the registry cache fetches nothing.
#include "builder/debs.hpp"
#include "builder/kinds/debs_unpack.hpp"
#include "builder/layer_kind.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <map>
#include <mutex>
#include <set>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::string lock_fix(const spec::BuildSpec* s, const spec::LayerSpec& l) {
  return "write it with paddle-image lock --spec " + (s ? s->file.filename().string() : std::string("SPEC")) +
         " --layer " + l.name;
}

// The lock, checked against the layer's request and the dpkg status it lands on.
debian::Lock read_checked_lock(const spec::LayerSpec& l, const debian::Request& req, const std::string& status) {
  const auto& d = l.debs();
  const std::string where = d.lock_origin + ": layer '" + l.name + "'";
  std::error_code ec;
  if (!fs::is_regular_file(d.lock_file, ec)) {
    throw Error(ErrorKind::input, where + ": the lock " + d.lock_file.string() + " does not exist",
                lock_fix(nullptr, l));
  }
  debian::Lock lock = debian::parse_lock(util::read_file(d.lock_file), d.lock_file.string());
  if (debian::request_json(lock.request) != debian::request_json(req)) {
    throw Error(ErrorKind::input,
                where + ": the lock " + d.lock_file.string() +
                    " was written for other packages, repositories or architecture than the layer names now",
                "lock it again: " + lock_fix(nullptr, l));
  }
  std::string have = status.empty() ? "" : util::sha256_hex(status);
  if (have != lock.base_status_sha256) {
    throw Error(ErrorKind::input,
                where + ": the lock " + d.lock_file.string() +
                    " was resolved against a base with other Debian packages than this build's base",
                "the base changed: lock it again (" + lock_fix(nullptr, l) + ") so apt decides against what it has");
  }
  return lock;
}

// The repository a locked package comes from, as the spec names it.
const spec::DebRepositorySpec& repo_of(const spec::LayerSpec& l, const debian::LockedPackage& p) {
  for (const auto& r : l.debs().repositories) {
    if (util::redact_url(r.url) == p.repository) {
      return r;
    }
  }
  throw Error(ErrorKind::input,
              l.debs().lock_file.string() + ": " + p.name + " comes from " + p.repository +
                  ", which the layer does not name",
              "lock it again: " + lock_fix(nullptr, l));
}

std::string package_url(const spec::DebRepositorySpec& r, const debian::LockedPackage& p) {
  std::string base = r.url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  // Each segment of the index's Filename percent-encoded: the file is named as the
  // index spells it ("libxau6_1%3a1.0.9-1_amd64.deb" has a literal '%').
  std::string path;
  for (const auto& seg : util::split(p.filename, '/')) {
    path += "/" + util::percent_encode(seg);
  }
  return base + path;
}

// Each locked .deb in the cache (fetched once, keyed by its SHA-256), checked.
std::vector<fs::path> fetch_debs(const spec::LayerSpec& l, const debian::Lock& lock, const LayerContext& cx) {
  std::unique_ptr<DebsFetcher> fetcher;
  std::mutex mutex;
  std::vector<fs::path> out(lock.packages.size());
  int downloaded = 0;
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < lock.packages.size(); ++i) {
    const debian::LockedPackage& p = lock.packages[i];
    const std::string url = package_url(repo_of(l, p), p);
    bool rebuilt = false;
    layers::BlobInfo blob = layers::cached_download(
        cx.cache, util::sha256_hex("deb-file\n" + p.sha256), "application/vnd.debian.binary-package",
        [&](const layers::DownloadSink& write, const std::function<void()>& restart) {
          if (!fetcher) {
            fetcher = debs_fetcher(l, cx.options);
          }
          std::int64_t size = 0;
          fetcher->fetch(
              url,
              [&](const char* data, std::size_t len) {
                size += static_cast<std::int64_t>(len);
                if (p.size >= 0 && size > p.size) {
                  throw Error(ErrorKind::integrity,
                              util::redact_url(url) + " sends more than the " + std::to_string(p.size) +
                                  " bytes the lock gives for " + p.name + " " + p.version + "; nothing was stored",
                              "the repository serves another file than the one locked; find out why before you lock "
                              "again");
                }
                write(data, len);
              },
              [&] {
                size = 0;
                restart();
              });
        },
        [&](const std::string& got, std::int64_t size) {
          if (got != p.sha256 || (p.size >= 0 && size != p.size)) {
            throw Error(ErrorKind::integrity,
                        util::redact_url(url) + ": " + p.name + " " + p.version + " has sha256 " + got + " (" +
                            std::to_string(size) + " bytes), but the lock " + l.debs().lock_file.string() + " gives " +
                            p.sha256 + " (" + std::to_string(p.size) + " bytes); nothing was stored",
                        "the repository serves other bytes than the ones its signed index listed when the lock was "
                        "written (a tampered mirror, or a rebuilt package): find out why before you lock again");
          }
        },
        rebuilt);
    if (blob.digest.hex != p.sha256) {
      throw Error(ErrorKind::integrity, "the cache holds other bytes for " + p.name + " " + p.version,
                  "run paddle-image cache prune --all");
    }
    out[i] = cx.cache.blobs().blob_path(blob.digest);
    std::lock_guard<std::mutex> g(mutex);
    if (rebuilt) {
      ++downloaded;
      bytes += blob.size;
    }
  }
  cx.events.info("  debs: " + std::to_string(downloaded) + " downloaded (" + std::to_string(bytes) + " bytes), " +
                 std::to_string(lock.packages.size() - static_cast<std::size_t>(downloaded)) + " from the cache");
  return out;
}

// The layer's key: the lock's packages, the dpkg status and records it lands on, and the
// landing's directories and links (which its entries take their metadata from).
std::string debs_key(const debian::Lock& lock, const std::string& status, const LayerContext& cx) {
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  nlohmann::json pk = nlohmann::json::array();
  for (const auto& p : lock.packages) {
    pk.push_back({p.name, p.version, p.architecture, p.sha256, p.size});
  }
  key.add({{"kind", "debs"}, {"packages", pk}, {"status", util::sha256_hex(status)}, {"dpkg_rules", 2}});
  // The base's files the unpack rules and the ldconfig step read: dpkg's file lists,
  // diversions and stat overrides, the users and groups, the loader's configuration and cache.
  util::Sha256 records;
  for (const auto& [path, content] : cx.landing.contents()) {
    if (path.rfind("var/lib/dpkg/", 0) == 0 || path.rfind("etc/ld.so.", 0) == 0 || path == "etc/passwd" ||
        path == "etc/group") {
      records.update(path + "\n" + std::to_string(content.size()) + "\n");
      records.update(content);
    }
  }
  key.add({{"records", records.finish_hex()}});
  util::Sha256 tree;
  for (const auto& [path, n] : cx.landing.nodes()) {
    if (n.type == '5' || n.type == '2') {
      nlohmann::json j = {path,
                          std::string(1, n.type),
                          n.mode,
                          n.owner.uid,
                          n.owner.gid,
                          n.owner.uname.str(),
                          n.owner.gname.str(),
                          n.target,
                          n.xattrs};
      tree.update(j.dump());
      tree.update("\n", 1);
    }
  }
  key.add({{"landing", tree.finish_hex()}});
  return key.finish();
}

class DebsLayerKind : public LayerKind {
public:
  std::vector<LayerReport> build(const spec::LayerSpec& l, const LayerContext& cx, LayerReport proto) const override {
    const std::string where = l.origin + ": layer '" + l.name + "'";
    std::string status = landing_dpkg_status(cx.landing, where);
    debian::Request req;
    req.packages = l.debs().packages;
    req.architecture = cx.architecture;
    for (const auto& rs : l.debs().repositories) {
      req.repositories.push_back(debian::Repository{rs.url, rs.suite, rs.components, rs.keyring, rs.origin});
    }
    debian::Lock lock = read_checked_lock(l, req, status);
    std::string key = debs_key(lock, status, cx);
    layers::LayerRecord record;
    layers::Found found = layers::Found::built;
    layers::BlobInfo blob = cx.cache.get_or_build(
        key, [&] { return key; },
        [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
          std::vector<fs::path> debs = fetch_debs(l, lock, cx);
          util::TempDir staging(cx.cache.layout().staging(), "debs-");
          std::map<std::string, layers::Entry> entries;
          util::with_context(where, [&] {
            DebsUnpack unpack(cx.landing, status, cx.architecture, staging.path());
            for (std::size_t i = 0; i < debs.size(); ++i) {
              unpack.install(lock.packages[i], debs[i]);
            }
            entries = unpack.finish(cx.events.info);
          });
          cx.events.info("  installing " + std::to_string(lock.packages.size()) +
                         " package(s): " + std::to_string(entries.size()) + " entries with dpkg's records");
          layers::EntrySet set;
          set.replace_entries(std::move(entries));
          set.add_missing_parents(layers::Owner{});
          tell_links(land_on_base(set, cx, l), cx.events);
          rec.tree = layers::entry_tree(set);
          rec.entries = set.entries().size();
          return write_layer(set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
        },
        found, record);
    note_found(cx, found, blob, proto);
    proto.debs = nlohmann::json::array();
    for (const auto& p : lock.packages) {
      proto.debs.push_back({{"name", p.name},
                            {"version", p.version},
                            {"architecture", p.architecture},
                            {"filename", p.filename.substr(p.filename.rfind('/') + 1)},
                            {"sha256", p.sha256},
                            {"url", util::redact_url(package_url(repo_of(l, p), p))}});
    }
    proto.entries = record.entries.value_or(0);
    cx.tree_out = record.tree.value_or(nlohmann::json::array());
    proto.blob = blob;
    return {std::move(proto)};
  }
};

} // namespace

const LayerKind& debs_layer_kind() {
  static const DebsLayerKind kind;
  return kind;
}

} // namespace builder
