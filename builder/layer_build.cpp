#include "builder/layer_build.hpp"

#include "layers/tar.hpp"

#include "util/encoding.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <mutex>
#include <thread>

namespace builder {

using nlohmann::json;

namespace {

json compression_json(const layers::CompressOptions& co) {
  return {{"kind", static_cast<int>(co.kind)}, {"level", co.level}};
}

} // namespace

layers::Owner to_owner(const std::optional<spec::OwnerSpec>& o) {
  if (!o) {
    return {};
  }
  return layers::Owner{o->uid, o->gid, o->uname, o->gname};
}

// One NUL-separated record per entry (hot on no-change rebuilds of big trees, so no
// JSON here); buffered into the hash in 64 KiB pieces.
void add_entries_to_key(KeyHasher& k, const layers::EntrySet& set) {
  std::string buf;
  buf.reserve(1 << 16);
  auto field = [&](const std::string& s) {
    buf += s;
    buf.push_back('\0');
  };
  auto num = [&](auto v) { // the same decimal text as std::to_string, without a string per number
    char digits[24];
    auto res = std::to_chars(digits, digits + sizeof digits, v);
    buf.append(digits, res.ptr);
    buf.push_back('\0');
  };
  for (const auto& [path, e] : set.entries()) {
    field(path);
    num(static_cast<int>(e.type));
    num(e.mode);
    num(e.owner.uid);
    num(e.owner.gid);
    field(e.owner.uname);
    field(e.owner.gname);
    num(e.size);
    field(e.link_target);
    field(e.source);
    num(e.dev);
    num(e.ino);
    num(e.mtime_ns);
    num(e.ctime_ns);
    if (e.xattrs) {
      for (const auto& [name, value] : *e.xattrs) {
        field(name);
        field(value);
      }
    }
    buf.push_back('\n');
    if (buf.size() >= (1 << 16)) {
      k.raw(buf);
      buf.clear();
    }
  }
  k.raw(buf);
}

namespace {

// The SHA-256 of each file, on `threads` threads (the first failure is rethrown).
std::vector<std::string> hash_files(const std::vector<const std::string*>& files, int threads) {
  std::vector<std::string> sums(files.size());
  std::atomic<std::size_t> next{0};
  std::exception_ptr failed;
  std::mutex failed_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      try {
        sums[i] = util::sha256_file_hex(*files[i]);
      } catch (...) {
        std::lock_guard<std::mutex> g(failed_mutex);
        failed = std::current_exception();
        next = files.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(std::max(1, threads), static_cast<int>(files.size())); ++t) {
    pool.emplace_back(work);
  }
  work();
  for (auto& t : pool) {
    t.join();
  }
  if (failed) {
    std::rethrow_exception(failed);
  }
  return sums;
}

} // namespace

layers::ContentChecks content_checks(const layers::EntrySet& set, std::int64_t walk_start_ns, int threads) {
  std::vector<const std::string*> files;
  for (const auto& [path, e] : set.entries()) {
    if (e.type == layers::Entry::Type::file && layers::racily_clean(e.mtime_ns, e.ctime_ns, walk_start_ns)) {
      files.push_back(&e.source);
    }
  }
  std::vector<std::string> sums = hash_files(files, threads);
  layers::ContentChecks out;
  out.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    out.push_back(layers::ContentCheck{*files[i], std::move(sums[i])});
  }
  return out;
}

void add_entry_contents_to_key(KeyHasher& k, const layers::EntrySet& set, int threads) {
  std::vector<const std::string*> files;
  for (const auto& [path, e] : set.entries()) {
    if (e.type == layers::Entry::Type::file) {
      files.push_back(&e.source);
    }
  }
  std::vector<std::string> sums = hash_files(files, threads);
  std::size_t file = 0;
  for (const auto& [path, e] : set.entries()) {
    nlohmann::json xattrs = nlohmann::json::object();
    if (e.xattrs) {
      for (const auto& [name, value] : *e.xattrs) {
        xattrs[name] = util::base64_encode(value);
      }
    }
    k.add({path, static_cast<int>(e.type), e.mode, e.owner.uid, e.owner.gid, e.owner.uname.str(), e.owner.gname.str(),
           e.size, e.link_target, xattrs, e.type == layers::Entry::Type::file ? sums[file++] : std::string()});
  }
}

// The start of every layer key: format version, compression and epoch.
void start_layer_key(KeyHasher& key, const layers::CompressOptions& co, const BuildOptions& o) {
  key.add({{"v", k_key_version}, {"compression", compression_json(co)}, {"epoch", o.source_date_epoch}});
}

layers::BlobInfo write_layer(const layers::EntrySet& set, const layers::CompressOptions& co, std::int64_t epoch,
                             util::AtomicFile& tmp, const std::string& name, const Events& ev) {
  layers::LayerStream stream(co, tmp);
  std::int64_t total = set.total_size();
  std::int64_t done = 0;
  std::int64_t next_report = 0;
  layers::write_tar(set, layers::TarOptions{epoch}, [&](const char* d, std::size_t n) {
    stream.write(d, n);
    done += static_cast<std::int64_t>(n);
    if (done >= next_report) {
      ev.progress(name, std::min(done, total), total);
      next_report = done + (8 << 20);
    }
  });
  ev.progress(name, total, total);
  return stream.finish();
}

// What a layer's entries land on: the base's directories keep their metadata, and
// destinations through the base's symlinks go where the links lead
// (layers::apply_base_view). The entries, and so the cache key computed from them,
// then depend on exactly the base entries the layer touches. Returns the symlinks
// followed (tell_links says them).
std::vector<std::string> land_on_base(layers::EntrySet& set, const LayerContext& cx, const spec::LayerSpec& l) {
  return layers::apply_base_view(set, cx.landing, l.origin + ": layer '" + l.name + "'");
}

void note_found(const LayerContext& cx, layers::Found found, const layers::BlobInfo& blob, LayerReport& r) {
  r.rebuilt = found == layers::Found::built;
  if (found == layers::Found::built) {
    return;
  }
  r.cache_origin = found == layers::Found::remote ? "registry" : "local";
  if (auto hit = cx.cache.remote_origin(blob.digest)) {
    r.cache_repository = hit->registry + "/" + hit->repository;
    r.cache_verified = hit->verified;
    if (found == layers::Found::remote) {
      cx.events.info("  from the registry cache " + r.cache_repository +
                     (hit->verified ? " (signature verified)" : ""));
    }
  }
}

void tell_links(const std::vector<std::string>& links, const Events& ev) {
  for (const auto& link : links) {
    ev.info("  through the symlink /" + link + " of the layers below");
  }
}

layers::CopyRule copy_rule(const spec::CopySpec& c, const spec::LayerSpec& l) {
  return layers::CopyRule{c.from,
                          c.to,
                          c.exclude,
                          c.mode,
                          c.dir_mode,
                          to_owner(c.owner ? c.owner : l.owner),
                          c.allow_absolute_symlinks,
                          c.origin,
                          c.ignore,
                          c.ignore_prefix,
                          c.symlink,
                          c.directory};
}

} // namespace builder
