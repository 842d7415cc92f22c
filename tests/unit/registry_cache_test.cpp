#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "builder/layer_build.hpp"
#include "builder/registry_cache.hpp"
#include "layers/cache.hpp"
#include "layers/compress.hpp"
#include "layers/tree.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace unit_registry_cache_test {

namespace fs = std::filesystem;

namespace {

// A registry cache in memory: entries by (kind, key), blobs as files kept in `dir`.
class MemoryRemote : public layers::RemoteCache {
public:
  explicit MemoryRemote(fs::path dir, bool writes) : m_dir(std::move(dir)), m_writes(writes) {
    fs::create_directories(m_dir);
  }
  std::optional<layers::RemoteHit> fetch(layers::CacheEntryKind kind, const std::string& key) override {
    ++fetches;
    auto it = entries.find(std::string(layers::entry_kind_name(kind)) + " " + key);
    if (it == entries.end()) {
      return std::nullopt;
    }
    return it->second;
  }
  void download(const layers::RemoteHit& hit, util::AtomicFile& tmp) override {
    ++downloads;
    std::string bytes = util::read_file(m_dir / hit.info.digest.hex);
    tmp.write(bytes);
  }
  std::string check(const layers::RemoteHit& hit) override {
    ++checks;
    return layers::blob_mismatch(m_dir / hit.info.digest.hex, hit.info);
  }
  bool writes() const override { return m_writes; }
  void store(layers::CacheEntryKind kind, const std::string& key, const layers::BlobInfo& info,
             const nlohmann::json& extra, const std::function<fs::path()>& local_file,
             const layers::RemoteHit* from) override {
    ++stores;
    stored_keys.push_back(key);
    if (from == nullptr) {
      fs::copy_file(local_file(), m_dir / info.digest.hex, fs::copy_options::overwrite_existing);
    }
    layers::RemoteHit hit;
    hit.info = info;
    hit.extra = extra;
    hit.registry = "reg.example";
    hit.repository = "team/app/cache";
    entries[std::string(layers::entry_kind_name(kind)) + " " + key] = hit;
  }
  std::map<std::string, layers::RemoteHit> entries;
  std::vector<std::string> stored_keys;
  int fetches = 0, downloads = 0, stores = 0, checks = 0;

private:
  fs::path m_dir;
  bool m_writes;
};

layers::BlobInfo produce_text(util::AtomicFile& out, const std::string& text) {
  layers::LayerStream s(layers::CompressOptions{}, out);
  s.write(text.data(), text.size());
  return s.finish();
}

std::string key_of(char c) {
  return std::string(64, c);
}

} // namespace

TEST_SUITE("registry cache") {
  TEST_CASE("cache_tag: kind prefix, deterministic, a valid tag, and another per tool version") {
    nlohmann::json v1 = builder::cache_versions("0.1.0");
    nlohmann::json v2 = builder::cache_versions("0.2.0");
    std::string t = builder::cache_tag(layers::CacheEntryKind::layer, key_of('a'), v1);
    CHECK(t.rfind("layer-", 0) == 0);
    CHECK(t.size() == 70);
    CHECK(oci::is_valid_tag(t));
    CHECK(t == builder::cache_tag(layers::CacheEntryKind::layer, key_of('a'), v1));
    CHECK(t != builder::cache_tag(layers::CacheEntryKind::layer, key_of('b'), v1));
    CHECK(t != builder::cache_tag(layers::CacheEntryKind::layer, key_of('a'), v2));
    CHECK(builder::cache_tag(layers::CacheEntryKind::base_view, key_of('a'), v1).rfind("view-", 0) == 0);
    CHECK(v1.at("zlib").get<std::string>() != "");
    CHECK(v1.at("zstd").get<std::string>() != "");
  }

  TEST_CASE("parse_cache_repository: a registry repository, no tag, digest or layout") {
    auto r = builder::parse_cache_repository("reg.example:5000/team/app/cache", "--cache-to");
    CHECK(r.registry == "reg.example:5000");
    CHECK(r.repository == "team/app/cache");
    CHECK(r.tag.empty());
    for (const char* bad : {"reg.example/team/app:cache", "oci:dir", "reg.example/a@sha256:" /* incomplete */}) {
      util::Error e = test_support::error_of([&] { builder::parse_cache_repository(bad, "--cache-from"); });
      CHECK(e.kind() == util::ErrorKind::usage);
      CHECK(std::string(e.what()).find("--cache-from") != std::string::npos);
    }
  }

  TEST_CASE("LayerCache with a remote: a local miss is a remote hit, nothing built, downloaded once") {
    util::TempDir tmp(fs::temp_directory_path(), "pi-rc-");
    MemoryRemote remote(tmp.path() / "remote", true);
    std::string portable_key = key_of('p');
    int built = 0;
    auto produce = [&](util::AtomicFile& out, layers::LayerRecord& rec) {
      ++built;
      rec.entries = 3;
      return produce_text(out, "layer bytes");
    };
    layers::BlobInfo first;
    {
      layers::LayerCache a(tmp.path() / "a");
      a.set_remote(&remote);
      layers::Found found = layers::Found::local;
      layers::LayerRecord rec;
      first = a.get_or_build(
          key_of('1'), [&] { return portable_key; }, produce, found, rec);
      CHECK(found == layers::Found::built);
      CHECK(remote.stored_keys == std::vector<std::string>{portable_key}); // stored under the portable key
    }
    // Another machine: another local key (stat data), the same portable key.
    layers::LayerCache b(tmp.path() / "b");
    b.set_remote(&remote);
    layers::Found found = layers::Found::built;
    layers::LayerRecord rec;
    layers::BlobInfo hit = b.get_or_build(
        key_of('2'), [&] { return portable_key; }, produce, found, rec);
    CHECK(found == layers::Found::remote);
    CHECK(built == 1);
    CHECK(hit.digest == first.digest);
    CHECK(rec.entries == std::optional<std::size_t>(3));
    CHECK_FALSE(b.blobs().has(hit.digest)); // still in the registry
    REQUIRE(b.remote_hit(hit.digest).has_value());
    CHECK(b.remote_hit(hit.digest)->repository == "team/app/cache");
    fs::path file = b.local_blob(hit.digest);
    CHECK(util::sha256_file_hex(file) == hit.digest.hex);
    CHECK(remote.downloads == 1);
    CHECK_FALSE(b.remote_hit(hit.digest).has_value());
    CHECK(b.remote_origin(hit.digest).has_value()); // the report still says where it came from
    b.local_blob(hit.digest);
    CHECK(remote.downloads == 1);
    // The key file was written: the next build is a local hit, the registry not asked.
    int fetches = remote.fetches;
    b.set_remote(nullptr);
    bool rebuilt = true;
    b.get_or_build(key_of('2'), produce, rebuilt, rec);
    CHECK_FALSE(rebuilt);
    CHECK(remote.fetches == fetches);
  }

  TEST_CASE("LayerCache with a remote: a local hit is stored once its portable key is known; no key, no remote") {
    util::TempDir tmp(fs::temp_directory_path(), "pi-rc-");
    MemoryRemote remote(tmp.path() / "remote", true);
    layers::LayerCache c(tmp.path() / "c");
    auto produce = [&](util::AtomicFile& out, layers::LayerRecord&) { return produce_text(out, "x"); };
    bool rebuilt = false;
    layers::LayerRecord rec;
    c.get_or_build(key_of('1'), produce, rebuilt, rec); // built before a registry cache was set
    c.set_remote(&remote);
    int portable_calls = 0;
    auto portable = [&] {
      ++portable_calls;
      return key_of('p');
    };
    layers::Found found = layers::Found::built;
    c.get_or_build(key_of('1'), portable, produce, found, rec);
    CHECK(found == layers::Found::local);
    CHECK(portable_calls == 1);
    CHECK(remote.stores == 1);
    c.get_or_build(key_of('1'), portable, produce, found, rec);
    CHECK(portable_calls == 1); // kept in the key file: a local hit does not hash again
    CHECK(remote.stores == 2);
    CHECK(remote.stored_keys.back() == key_of('p'));
    // A call without a portable key (a base layer pulled into the cache) never asks the remote.
    int fetches = remote.fetches;
    c.get_or_build(key_of('9'), produce, rebuilt, rec);
    CHECK(remote.fetches == fetches);
  }

  TEST_CASE("content keys: the same files elsewhere give the same key, an edit another one") {
    util::TempDir tmp(fs::temp_directory_path(), "pi-rc-");
    for (const char* d : {"one", "two"}) {
      fs::create_directories(tmp.path() / d / "src");
      std::ofstream(tmp.path() / d / "src" / "a.py") << "print(1)\n";
      std::ofstream(tmp.path() / d / "b.txt") << "b\n";
    }
    fs::last_write_time(tmp.path() / "two" / "b.txt", fs::file_time_type::clock::now() - std::chrono::hours(5));
    auto keys = [&](const char* d) {
      layers::EntrySet set;
      set.add(layers::CopyRule{tmp.path() / d, "/app/", {}, {}, {}, {}, false, "test", {}, {}, {}, false});
      set.finalize(layers::Owner{});
      builder::KeyHasher content, stat;
      builder::add_entry_contents_to_key(content, set, 2);
      builder::add_entries_to_key(stat, set);
      return std::make_pair(content.finish(), stat.finish());
    };
    auto one = keys("one");
    auto two = keys("two");
    CHECK(one.first == two.first);   // portable
    CHECK(one.second != two.second); // the stat key sees paths, inodes and times
    std::ofstream(tmp.path() / "two" / "src" / "a.py") << "print(2)\n";
    CHECK(keys("two").first != one.first);
  }
}

} // namespace unit_registry_cache_test
