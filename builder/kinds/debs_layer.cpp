// The debs layer: the Debian packages of its lock (builder/debs.hpp, `paddle-image
// lock`), each fetched once into the cache and checked against the lock's SHA-256 and
// size, its data archive laid out with the package's modes and owners (times from
// source_date_epoch, the base's directories keeping their metadata), and dpkg's records
// for it written beside: the status with the base's packages and these, and
// var/lib/dpkg/info. Keyed by the lock's packages and the base's dpkg status, so a
// fresh runner with the registry cache fetches nothing.
#include "builder/debs.hpp"
#include "builder/layer_kind.hpp"
#include "debian/install.hpp"
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

layers::Owner member_owner(const debian::DataMember& m) {
  layers::Owner o;
  o.uid = m.uid;
  o.gid = m.gid;
  o.uname = layers::Name(m.uname);
  o.gname = layers::Name(m.gname);
  return o;
}

// A file dpkg's records add to the layer (root's, 0644 or 0755).
void add_record(std::map<std::string, layers::Entry>& entries, const fs::path& staging, int& counter,
                const std::string& path, const std::string& content, std::uint32_t mode) {
  fs::path src = staging / ("r" + std::to_string(counter++));
  util::write_file_atomic(src, content);
  layers::Entry e;
  e.path = path;
  e.type = layers::Entry::Type::file;
  e.mode = mode;
  e.size = static_cast<std::int64_t>(content.size());
  e.source = src.string();
  entries[path] = e;
}

struct Installed {
  std::map<std::string, layers::Entry> entries;
  std::map<std::string, std::string> owner_of; // path -> the package that ships it
  std::vector<debian::Paragraph> status;
};

// One package's files into `in`, its records beside.
void install_deb(const debian::LockedPackage& p, const fs::path& deb, const fs::path& staging, int& counter,
                 Installed& in) {
  const std::string what = "package " + p.name + " " + p.version + " (" + p.filename + ")";
  std::set<std::string> conffiles;
  std::vector<std::pair<std::string, std::string>> conffile_sums;
  std::vector<std::string> paths;
  debian::DebControl control = debian::read_deb(
      deb, what,
      [&](const debian::DebControl& c) {
        if (c.control.value("Package") != p.name || c.control.value("Version") != p.version ||
            c.control.value("Architecture") != p.architecture) {
          throw Error(ErrorKind::integrity, what + ": its control file says " + c.control.value("Package") + " " +
                                                c.control.value("Version") + " " + c.control.value("Architecture"));
        }
        debian::check_maintainer_scripts(c, what);
        for (const auto& f : debian::conffile_paths(c)) {
          conffiles.insert(f);
        }
      },
      [&](const debian::DataMember& m, const debian::ReadData& read) {
        paths.push_back(m.path);
        if (m.path.empty()) {
          return; // "./": the root, which the base has
        }
        if (m.path.rfind("etc/ld.so.conf.d/", 0) == 0 && m.type != '5') {
          throw Error(ErrorKind::input,
                      what + " adds " + m.path + ", a library directory the loader finds only after ldconfig runs",
                      "a debs layer runs no ldconfig: leave the package out, or set LD_LIBRARY_PATH in the spec's "
                      "config.env to the directory it names");
        }
        layers::Entry e;
        e.path = m.path;
        e.mode = m.mode;
        e.owner = member_owner(m);
        auto prev = in.entries.find(m.path);
        if (m.type == '5') {
          e.type = layers::Entry::Type::dir;
          if (prev != in.entries.end() && prev->second.type != layers::Entry::Type::dir) {
            throw Error(ErrorKind::input,
                        what + " has a directory /" + m.path + " where " + in.owner_of[m.path] + " has a file");
          }
          if (prev == in.entries.end()) {
            in.entries[m.path] = e;
          }
          return;
        }
        if (prev != in.entries.end()) {
          throw Error(ErrorKind::input, what + " ships /" + m.path + ", which " + in.owner_of[m.path] + " ships too",
                      "dpkg would refuse to overwrite it as well: leave one of the two packages out");
        }
        in.owner_of[m.path] = p.name;
        if (m.type == '2') {
          e.type = layers::Entry::Type::symlink;
          e.link_target = m.link;
        } else if (m.type == '1') {
          e.type = layers::Entry::Type::hardlink;
          e.link_target = m.link;
        } else {
          e.type = layers::Entry::Type::file;
          fs::path src = staging / ("f" + std::to_string(counter++));
          util::AtomicFile out(src);
          std::string keep; // a conffile's bytes, for its recorded MD5
          const bool conf = conffiles.count("/" + m.path) != 0;
          char buf[65536];
          std::int64_t total = 0;
          for (std::size_t n; (n = read(buf, sizeof buf)) > 0;) {
            out.write(buf, n);
            total += static_cast<std::int64_t>(n);
            if (conf) {
              keep.append(buf, n);
            }
          }
          out.commit();
          if (conf) {
            conffile_sums.emplace_back("/" + m.path, util::md5_hex(keep));
          }
          e.size = total;
          e.source = src.string();
        }
        in.entries[m.path] = e;
      });
  std::sort(conffile_sums.begin(), conffile_sums.end());
  in.status.push_back(debian::status_paragraph(control.control, conffile_sums));
  for (const auto& [name, content] : debian::info_files(control, paths)) {
    std::string ext = name.substr(name.rfind('.') + 1);
    bool script = ext == "preinst" || ext == "postinst" || ext == "prerm" || ext == "postrm" || ext == "config";
    add_record(in.entries, staging, counter, "var/lib/dpkg/info/" + name, content, script ? 0755 : 0644);
  }
}

// No entry below a file or a symlink of the layer itself (a package that ships a link
// and then files through it would have the runtime write wherever the link points).
void check_parents(const Installed& in) {
  for (const auto& [path, e] : in.entries) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) {
      continue;
    }
    auto parent = in.entries.find(path.substr(0, slash));
    if (parent != in.entries.end() && parent->second.type != layers::Entry::Type::dir) {
      auto owner = in.owner_of.find(path);
      auto parent_owner = in.owner_of.find(parent->first);
      throw Error(ErrorKind::input,
                  "package " + (owner == in.owner_of.end() ? std::string("?") : owner->second) + " ships /" + path +
                      " below /" + parent->first + ", which " +
                      (parent_owner == in.owner_of.end() ? std::string("?") : parent_owner->second) +
                      " ships as a file or symlink",
                  "dpkg would not install it either: leave one of the packages out");
    }
  }
}

// The layer's key: the lock's packages, the dpkg status it lands on, and the landing's
// directories and links (which its entries take their metadata from).
std::string debs_key(const debian::Lock& lock, const std::string& status, const LayerContext& cx) {
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  nlohmann::json pk = nlohmann::json::array();
  for (const auto& p : lock.packages) {
    pk.push_back({p.name, p.version, p.architecture, p.sha256, p.size});
  }
  key.add({{"kind", "debs"}, {"packages", pk}, {"status", util::sha256_hex(status)}});
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
          Installed in;
          int counter = 0;
          for (std::size_t i = 0; i < debs.size(); ++i) {
            util::with_context(where, [&] { install_deb(lock.packages[i], debs[i], staging.path(), counter, in); });
          }
          util::with_context(where, [&] { check_parents(in); });
          add_record(in.entries, staging.path(), counter, "var/lib/dpkg/status",
                     debian::merged_status(status, in.status), 0644);
          cx.events.info("  installing " + std::to_string(lock.packages.size()) +
                         " package(s): " + std::to_string(in.entries.size()) + " entries with dpkg's records");
          layers::EntrySet set;
          set.replace_entries(std::move(in.entries));
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
