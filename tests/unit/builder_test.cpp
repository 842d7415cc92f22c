#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "builder/base.hpp"
#include "builder/build.hpp"
#include "builder/sign_build.hpp"
#include "builder/supply_chain.hpp"
#include "imageio/copy.hpp"
#include "imageio/destination.hpp"
#include "layers/cache.hpp"
#include "layers/compress.hpp"
#include "layers/tar.hpp"
#include "layers/walk_memo.hpp"
#include "oci/layout.hpp"
#include "oci/layout_image.hpp"
#include "oci/reference.hpp"
#include "signing/provenance.hpp"
#include "spec/spec.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace unit_builder_test {

namespace fs = std::filesystem;
using test_support::contains;
using test_support::error_of;

namespace {

using Strings = std::vector<std::string>;

const char* k_spec = R"(image:
  name: example.com/team/tiny
  tags: [spec-tag]
base: scratch
layers:
  - name: app
    files:
      - from: src
        to: /app/
  - name: conf
    files:
      - from: conf
        to: /etc/tiny/
config:
  entrypoint: [/app/run.sh]
  env:
    MODE: prod
  labels:
    team: ml
)";

// A project directory with a tiny spec, a cache and an output layout.
// A build's options with the destinations and --tag of `paddle-image build`.
struct TestBuild : builder::BuildOptions {
  std::vector<oci::ImageRef> outputs; // none: the default layout
  std::vector<std::string> tags;
};

// A build, then its image published as `paddle-image build` does (cli/cmd_build.cpp):
// layouts and archives one blob at a time, the spec's name for archives.
builder::BuildReport build_and_publish(const spec::BuildSpec& s, const TestBuild& o, const builder::Events& ev) {
  builder::BuildResult built = builder::build(s, o, ev);
  imageio::PublishOptions po;
  po.tags = o.tags;
  po.fallback = builder::fallback_tags(s);
  po.local.jobs = 1;
  po.local.attachments = false;
  po.archive_mtime = o.source_date_epoch;
  if (!s.name.empty()) {
    po.image_name = oci::ImageRef::parse(s.name);
  }
  po.registry_image = &built.registry_image();
  std::vector<oci::ImageRef> to = o.outputs;
  if (to.empty()) {
    to.push_back(builder::default_output(s));
  }
  builder::record_published(built.report, imageio::publish(built.image(), to, po));
  built.close();
  return std::move(built.report);
}

// The tags a build's destination gets (the one tag policy with a build's fallback).
Strings tags_for(const oci::ImageRef& out, const Strings& cli, const Strings& spec_tags) {
  spec::BuildSpec s;
  s.tags = spec_tags;
  return imageio::destination_tags(out, cli, builder::fallback_tags(s));
}

struct Project {
  util::TempDir tmp{fs::temp_directory_path(), "pi-builder-test-"};
  fs::path out;

  Project() {
    util::write_file_atomic(tmp.path() / "spec.yaml", k_spec);
    fs::create_directories(tmp.path() / "src" / "lib");
    util::write_file_atomic(tmp.path() / "src" / "main.py", "print('v1')\n");
    util::write_file_atomic(tmp.path() / "src" / "lib" / "util.py", "X = 1\n");
    util::write_file_atomic(tmp.path() / "src" / "run.sh", "#!/bin/sh\nexec python /app/main.py\n");
    fs::permissions(tmp.path() / "src" / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
    fs::create_directories(tmp.path() / "conf");
    util::write_file_atomic(tmp.path() / "conf" / "tiny.toml", "level = 1\n");
    out = tmp.path() / "out";
  }

  TestBuild options(const std::string& output_ref) const {
    TestBuild o;
    o.cache_dir = tmp.path() / "cache";
    o.outputs = {oci::ImageRef::parse(output_ref)};
    o.source_date_epoch = builder::k_default_epoch;
    o.threads = 1;
    return o;
  }

  builder::BuildReport build(const std::string& output_ref) const {
    return build_and_publish(spec::load(tmp.path() / "spec.yaml"), options(output_ref), builder::Events{});
  }
};

std::map<std::string, std::string> layer_files(const oci::OciLayout& layout, const oci::Descriptor& layer) {
  std::map<std::string, std::string> files;
  layers::scan_tar(
      layout.blobs().blob_path(layer.digest), [](const layers::TarMember& m) { return m.type == '0'; },
      [&](const layers::TarMember& m, const std::string& content) { files[m.path] = content; });
  return files;
}

} // namespace

TEST_SUITE("builder") {

  TEST_CASE("tags_for: the output's tag plus every --tag, else spec tags, else latest; -o and --push alike") {
    auto tagged = oci::ImageRef::parse("oci:/x/out:from-output");
    auto untagged = oci::ImageRef::parse("oci:/x/out");
    const Strings cli = {"c1", "c2"};
    const Strings from_spec = {"s1"};
    CHECK(tags_for(tagged, cli, from_spec) == Strings{"from-output", "c1", "c2"});
    CHECK(tags_for(oci::ImageRef::parse("example.com/team/app:1.4.0"), {"latest"}, from_spec) ==
          Strings{"1.4.0", "latest"}); // the README's --push REPO:1.4.0 --tag latest
    CHECK(tags_for(oci::ImageRef::parse("example.com/team/app"), cli, from_spec) == cli);
    CHECK(tags_for(oci::ImageRef::parse("example.com/team/app"), {}, from_spec) == from_spec);
    CHECK(tags_for(oci::ImageRef::parse("docker-archive:/x/a.tar"), cli, from_spec) == cli);
    CHECK(tags_for(tagged, {}, {}) == Strings{"from-output"});
    CHECK(tags_for(untagged, cli, from_spec) == cli);
    CHECK(tags_for(untagged, cli, {}) == cli);
    CHECK(tags_for(untagged, {}, from_spec) == from_spec);
    CHECK(tags_for(untagged, {}, {}) == Strings{"latest"});
  }

  TEST_CASE("build of a tiny scratch spec into an oci: layout") {
    Project p;
    std::vector<std::string> info_lines;
    builder::Events ev;
    ev.info = [&](const std::string& line) { info_lines.push_back(line); };
    auto opts = p.options("oci:" + p.out.string() + ":v1");
    opts.revision = "abc123";
    auto rep = build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), opts, ev);

    CHECK_FALSE(info_lines.empty());
    CHECK(rep.base_name == "scratch");
    CHECK_FALSE(rep.base_digest.has_value());
    CHECK(rep.source_date_epoch == builder::k_default_epoch);
    CHECK(rep.outputs == Strings{"oci:" + p.out.string() + ":v1"});
    REQUIRE(rep.layers.size() == 2);
    CHECK(rep.layers[0].name == "app");
    CHECK(rep.layers[0].kind == "files");
    CHECK(rep.layers[0].rebuilt);
    CHECK(rep.layers[1].rebuilt);
    CHECK(rep.layers[0].entries == 5); // app, app/lib, app/lib/util.py, app/main.py, app/run.sh
    CHECK(rep.to_json()["layers"][0]["status"] == "rebuilt");

    auto layout = oci::OciLayout::open_existing(p.out);
    auto index = layout.read_index();
    REQUIRE(index.manifests.size() == 1);
    CHECK(index.manifests[0].annotations.at(oci::k_ref_name_annotation) == "v1");
    CHECK(index.manifests[0].digest == rep.manifest.digest);
    CHECK(index.manifests[0].media_type == oci::media::k_manifest);
    auto d = layout.resolve("v1");
    CHECK(d.digest == rep.manifest.digest);
    CHECK(d.size == rep.manifest.size);

    auto manifest = layout.read_manifest(d);
    CHECK(manifest.config.digest == rep.config_digest);
    REQUIRE(manifest.layers.size() == 2);
    CHECK(manifest.annotations.at("org.opencontainers.image.created") == "1980-01-01T00:00:00Z");
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(manifest.layers[i].digest == rep.layers[i].blob.digest);
      CHECK(manifest.layers[i].media_type == oci::media::k_layer_gzip);
      CHECK(layout.blobs().has(manifest.layers[i].digest));
      CHECK(util::sha256_file_hex(layout.blobs().blob_path(manifest.layers[i].digest)) ==
            manifest.layers[i].digest.hex);
    }

    auto cfg = layout.read_config(manifest);
    CHECK(cfg.created == "1980-01-01T00:00:00Z");
    CHECK(cfg.os == "linux");
    CHECK(cfg.architecture == "amd64");
    CHECK(cfg.config.labels.at("org.opencontainers.image.created") == "1980-01-01T00:00:00Z");
    CHECK(cfg.config.labels.at("org.opencontainers.image.revision") == "abc123");
    CHECK(cfg.config.labels.at("org.opencontainers.image.title") == "example.com/team/tiny");
    CHECK(cfg.config.labels.at("team") == "ml");
    CHECK(cfg.config.entrypoint == std::optional<Strings>(Strings{"/app/run.sh"}));
    CHECK(cfg.get_env("MODE") == std::optional<std::string>("prod"));
    REQUIRE(cfg.diff_ids.size() == 2);
    CHECK(cfg.diff_ids[0] == rep.layers[0].blob.diff_id);
    REQUIRE(cfg.history.size() == 2);
    CHECK(cfg.history[0].created == "1980-01-01T00:00:00Z");

    // The layer holds the files with their content.
    auto app_files = layer_files(layout, manifest.layers[0]);
    CHECK(app_files == std::map<std::string, std::string>{{"app/lib/util.py", "X = 1\n"},
                                                          {"app/main.py", "print('v1')\n"},
                                                          {"app/run.sh", "#!/bin/sh\nexec python /app/main.py\n"}});
    CHECK(layer_files(layout, manifest.layers[1]) ==
          std::map<std::string, std::string>{{"etc/tiny/tiny.toml", "level = 1\n"}});
    // The diff_id is the sha256 of the uncompressed tar.
    util::Sha256 h;
    layers::decompress_file(layout.blobs().blob_path(manifest.layers[0].digest), manifest.layers[0].media_type,
                            [&](const char* data, std::size_t n) { h.update(data, n); });
    CHECK(h.finish_hex() == cfg.diff_ids[0].hex);
  }

  TEST_CASE("tags come from the spec when the output and the command line name none") {
    Project p;
    auto rep = p.build("oci:" + p.out.string());
    CHECK(rep.outputs == Strings{"oci:" + p.out.string() + ":spec-tag"});
    auto layout = oci::OciLayout::open_existing(p.out);
    CHECK(layout.resolve("spec-tag").digest == rep.manifest.digest);

    auto opts = p.options("oci:" + p.out.string());
    opts.tags = {"cli1", "cli2"};
    build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), opts, builder::Events{});
    CHECK(layout.resolve("cli1").digest == rep.manifest.digest);
    CHECK(layout.resolve("cli2").digest == rep.manifest.digest);
  }

  TEST_CASE("building twice gives the same manifest digest and reuses every layer") {
    Project p;
    auto first = p.build("oci:" + p.out.string() + ":v1");
    auto second = p.build("oci:" + p.out.string() + ":v1");
    CHECK(second.manifest.digest == first.manifest.digest);
    CHECK(second.config_digest == first.config_digest);
    REQUIRE(second.layers.size() == 2);
    for (const auto& l : second.layers) {
      CAPTURE(l.name);
      CHECK_FALSE(l.rebuilt);
    }
    CHECK(second.to_json()["layers"][0]["status"] == "reused");
    CHECK(second.layers[0].entries == first.layers[0].entries);
    // The index still has exactly one entry for the tag.
    CHECK(oci::OciLayout::open_existing(p.out).read_index().manifests.size() == 1);

    SUBCASE("a fresh cache and a fresh layout give the same bytes") {
      auto opts = p.options("oci:" + (p.tmp.path() / "out2").string() + ":v1");
      opts.cache_dir = p.tmp.path() / "cache2";
      opts.threads = 2;
      auto third = build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), opts, builder::Events{});
      CHECK(third.manifest.digest == first.manifest.digest);
      CHECK(third.layers[0].rebuilt);
    }
    SUBCASE("a different epoch changes the image") {
      auto opts = p.options("oci:" + p.out.string() + ":v2");
      opts.source_date_epoch = builder::k_default_epoch + 1;
      auto other = build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), opts, builder::Events{});
      CHECK(other.manifest.digest != first.manifest.digest);
      CHECK(other.layers[0].rebuilt);
      auto layout = oci::OciLayout::open_existing(p.out);
      CHECK(layout.read_config(layout.read_manifest(layout.resolve("v2"))).created == "1980-01-01T00:00:01Z");
    }
  }

  TEST_CASE("changing one file's content changes only that layer") {
    Project p;
    auto first = p.build("oci:" + p.out.string() + ":v1");
    // Different length, so the change is visible whatever the timestamp granularity.
    util::write_file_atomic(p.tmp.path() / "src" / "main.py", "print('version two')\n");
    auto second = p.build("oci:" + p.out.string() + ":v2");

    REQUIRE(second.layers.size() == 2);
    CHECK(second.layers[0].rebuilt);
    CHECK(second.layers[0].blob.digest != first.layers[0].blob.digest);
    CHECK(second.layers[0].blob.diff_id != first.layers[0].blob.diff_id);
    CHECK_FALSE(second.layers[1].rebuilt);
    CHECK(second.layers[1].blob.digest == first.layers[1].blob.digest);
    CHECK(second.layers[1].blob.diff_id == first.layers[1].blob.diff_id);
    CHECK(second.manifest.digest != first.manifest.digest);

    auto layout = oci::OciLayout::open_existing(p.out);
    CHECK(layout.resolve("v1").digest == first.manifest.digest);
    CHECK(layout.resolve("v2").digest == second.manifest.digest);
    auto m2 = layout.read_manifest(layout.resolve("v2"));
    CHECK(layer_files(layout, m2.layers[0]).at("app/main.py") == "print('version two')\n");
  }

  TEST_CASE("split: a big layer ships as parts that together are the layer; reused without a walk") {
    Project p;
    fs::path big = p.tmp.path() / "big";
    std::mt19937 rng(35);
    auto random_file = [&](const fs::path& f, std::size_t n) {
      std::string bytes(n, '\0');
      for (auto& c : bytes) {
        c = static_cast<char>(rng());
      }
      fs::create_directories(f.parent_path());
      util::write_file_atomic(f, bytes);
    };
    for (int i = 0; i < 3; ++i) {
      random_file(big / "lib" / ("part" + std::to_string(i) + ".so"), 700000);
    }
    auto write_spec = [&](const std::string& split) {
      util::write_file_atomic(p.tmp.path() / "spec.yaml", "base: scratch\n" + split +
                                                              "layers:\n"
                                                              "  - name: fw\n"
                                                              "    files: [{from: big, to: /opt/fw/}]\n"
                                                              "  - name: conf\n"
                                                              "    files: [{from: conf, to: /etc/tiny/}]\n");
    };
    Strings debug;
    builder::Events ev;
    ev.debug = [&](const std::string& line) { debug.push_back(line); };
    auto build = [&](const std::string& tag) {
      debug.clear();
      return build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), p.options("oci:" + p.out.string() + ":" + tag),
                               ev);
    };
    write_spec("");
    auto whole = build("whole");
    write_spec("split: 1Mi\n");
    auto split = build("split");

    // 2.1 MB in parts of 1 MiB: the file that reaches 1 MiB ends part 1; then conf.
    REQUIRE(split.layers.size() == 3);
    for (std::size_t i = 0; i < 2; ++i) {
      CAPTURE(i);
      CHECK(split.layers[i].name == "fw");
      CHECK(split.layers[i].part == i + 1);
      CHECK(split.layers[i].parts == 2);
      CHECK(split.to_json()["layers"][i]["parts"] == 2);
    }
    CHECK(split.layers[2].parts == 1);
    CHECK_FALSE(split.to_json()["layers"][2].contains("parts"));
    CHECK(split.layers[2].blob.digest == whole.layers[1].blob.digest); // what lands on it is the same

    // The parts hold the whole layer's files, each once, with their directories.
    auto layout = oci::OciLayout::open_existing(p.out);
    auto m = layout.read_manifest(layout.resolve("split"));
    auto first_part = layer_files(layout, m.layers[0]);
    auto joined = layer_files(layout, m.layers[1]);
    CHECK(first_part.size() == 2);
    CHECK(joined.size() == 1);
    joined.insert(first_part.begin(), first_part.end());
    auto whole_manifest = layout.read_manifest(layout.resolve("whole"));
    CHECK(joined == layer_files(layout, whole_manifest.layers[0]));
    auto history = layout.read_config(m).history;
    REQUIRE(history.size() == 3);
    CHECK(history[1].created_by == "paddle-image build: files layer 'fw'");
    CHECK(contains(history[1].comment, "part 2 of 2"));

    // Again: every part reused, no walk, the same image.
    auto again = build("split");
    CHECK(again.manifest.digest == split.manifest.digest);
    CHECK(std::none_of(again.layers.begin(), again.layers.end(), [](const auto& l) { return l.rebuilt; }));
    CHECK(std::any_of(debug.begin(), debug.end(),
                      [](const std::string& l) { return contains(l, "layer 'fw': no path changed; not walking"); }));

    // The last file changed: the parts are written again, and only its part differs.
    random_file(big / "lib" / "part2.so", 700001);
    auto changed = build("split");
    REQUIRE(changed.layers.size() == 3);
    CHECK(changed.layers[0].rebuilt);
    CHECK(changed.layers[0].blob.digest == split.layers[0].blob.digest);
    CHECK(changed.layers[1].blob.digest != split.layers[1].blob.digest);
  }

  TEST_CASE("racily clean files: no memo for the walk, their bytes checked by the key file until they age") {
    Project p;
    Strings debug;
    builder::Events ev;
    ev.debug = [&](const std::string& line) { debug.push_back(line); };
    auto build = [&] {
      debug.clear();
      return build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), p.options("oci:" + p.out.string() + ":v"), ev);
    };
    auto said = [&](const std::string& text) {
      return std::any_of(debug.begin(), debug.end(), [&](const std::string& l) { return contains(l, text); });
    };
    auto checks_kept = [&] {
      std::size_t n = 0;
      for (const auto& k : fs::directory_iterator(p.tmp.path() / "cache" / "keys")) {
        n += nlohmann::json::parse(util::read_file(k.path())).value("checks", nlohmann::json::array()).size();
      }
      return n;
    };
    // Every source file's mtime a second ahead: racily clean however late the build
    // starts on a loaded machine (the suite runs tests side by side).
    const auto ahead = fs::file_time_type::clock::now() + std::chrono::seconds(1);
    for (const char* dir : {"src", "conf"}) {
      for (const auto& f : fs::recursive_directory_iterator(p.tmp.path() / dir)) {
        if (f.is_regular_file()) {
          fs::last_write_time(f.path(), ahead);
        }
      }
    }
    auto first = build(); // every file is racily clean
    CHECK(said("layer 'app': racily clean paths; not kept"));
    const bool memos = fs::exists(p.tmp.path() / "cache" / "walks") && !fs::is_empty(p.tmp.path() / "cache" / "walks");
    CHECK_FALSE(memos);
    CHECK(checks_kept() == 4); // main.py, lib/util.py, run.sh, conf/tiny.toml

    // A key file's check fails when the bytes changed, though the stat key matched: here
    // the key file is made to record other bytes, as a same-second edit would leave it.
    for (const auto& k : fs::directory_iterator(p.tmp.path() / "cache" / "keys")) {
      auto j = nlohmann::json::parse(util::read_file(k.path()));
      if (j.contains("checks")) {
        for (auto& c : j["checks"]) {
          c[1] = std::string(64, '0');
        }
        util::write_file_atomic(k.path(), j.dump());
      }
    }
    while (fs::file_time_type::clock::now() < ahead + std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10)); // past the granularity: nothing racy now
    }
    auto second = build();
    CHECK(said("changed since the layer was cached, its stat data did not (racily clean); rebuilding"));
    CHECK(second.layers[0].rebuilt);
    CHECK(second.manifest.digest == first.manifest.digest); // the same bytes, built again
    CHECK(checks_kept() == 0);                              // aged: written without checks
    auto third = build();
    CHECK(said("layer 'app': no path changed; not walking"));
    CHECK_FALSE(third.layers[0].rebuilt);
    CHECK(third.manifest.digest == first.manifest.digest);
  }

  TEST_CASE("racily_clean: times within the granularity of the walk's start") {
    const std::int64_t s = 1'000'000'000;
    const std::int64_t start = 1700000000 * s + 500'000'000; // half past a second
    CHECK(layers::timestamp_granularity_ns(1700000000 * s, 1700000000 * s) == 2 * s);
    CHECK(layers::timestamp_granularity_ns(1700000000 * s + 1, 1700000000 * s) >= 10'000'000);
    CHECK(layers::racily_clean(start - 1'000'000, start - 5 * s, start));           // mtime 1 ms before
    CHECK(layers::racily_clean(start - 5 * s, start + 1'000'000, start));           // ctime after the start
    CHECK_FALSE(layers::racily_clean(start - 5 * s + 7, start - 5 * s + 7, start)); // long before
    CHECK(layers::racily_clean(1700000000 * s, 1700000000 * s, start));             // whole seconds: 2 s
    CHECK(layers::racily_clean((1700000000 - 1) * s, (1700000000 - 1) * s, start));
    CHECK_FALSE(layers::racily_clean((1700000000 - 3) * s, (1700000000 - 3) * s, start));
  }

  TEST_CASE("the walk memo: a no-change rebuild does not walk, and every kind of change is still seen") {
    Project p;
    Strings debug;
    builder::Events ev;
    ev.debug = [&](const std::string& line) { debug.push_back(line); };
    auto build = [&](const fs::path& cache, int threads) {
      auto opts = p.options("oci:" + p.out.string() + ":v");
      opts.cache_dir = cache;
      opts.threads = threads;
      debug.clear();
      // Past the timestamp granularity of the changes just made: a walk of racily clean
      // paths keeps no memo (the next test case), and this one is about the memo.
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      return build_and_publish(spec::load(p.tmp.path() / "spec.yaml"), opts, ev);
    };
    auto said = [&](const std::string& text) {
      return std::any_of(debug.begin(), debug.end(), [&](const std::string& l) { return contains(l, text); });
    };
    const fs::path cache = p.tmp.path() / "cache";
    auto first = build(cache, 1);
    CHECK(fs::exists(cache / "walks"));
    auto again = build(cache, 2);
    CHECK(said("layer 'app': no path changed; not walking"));
    CHECK(said("layer 'conf': no path changed; not walking"));
    CHECK(again.manifest.digest == first.manifest.digest);
    CHECK_FALSE(again.layers[0].rebuilt);
    CHECK(again.layers[0].entries == first.layers[0].entries);

    // Each change, then a rebuild on the memo's cache, which must give what a build on
    // an empty cache gives; `cold` counts the fresh caches.
    int cold = 0;
    auto check_change = [&](const std::string& what, const std::function<void()>& change) {
      CAPTURE(what);
      change();
      auto warm = build(cache, 2);
      CHECK(said("layer 'app': something changed; walking"));
      CHECK(said("layer 'conf': the layers below changed; walking")); // it lands on app
      auto fresh = build(p.tmp.path() / ("cold-" + std::to_string(++cold)), 1);
      CHECK(warm.manifest.digest == fresh.manifest.digest);
      auto after = build(cache, 1); // the memos were written again
      CHECK(said("layer 'app': no path changed; not walking"));
      CHECK(said("layer 'conf': no path changed; not walking"));
      CHECK(after.manifest.digest == fresh.manifest.digest);
    };
    const fs::path src = p.tmp.path() / "src";
    check_change("a file added in a subdirectory", [&] { util::write_file_atomic(src / "lib" / "new.py", "Y = 2\n"); });
    check_change("a file removed", [&] { fs::remove(src / "lib" / "new.py"); });
    check_change("a file renamed", [&] { fs::rename(src / "lib" / "util.py", src / "lib" / "utils.py"); });
    check_change("a mode changed",
                 [&] { fs::permissions(src / "main.py", fs::perms::owner_exec, fs::perm_options::add); });
    check_change("content of the same size, rewritten in place", [&] {
      std::ofstream(src / "main.py", std::ios::in | std::ios::out | std::ios::binary) << "print('v2')\n";
    });
    check_change("a symlink pointed elsewhere", [&] {
      fs::create_symlink("abc.py", src / "link.py");
      build(cache, 1);
      fs::remove(src / "link.py");
      fs::create_symlink("xyz.py", src / "link.py"); // a target of the same length
    });
    check_change("a directory added", [&] { fs::create_directories(src / "lib" / "deep" / "er"); });
    check_change("a file added in a new directory",
                 [&] { util::write_file_atomic(src / "lib" / "deep" / "er" / "z.py", "z\n"); });
    check_change("the source replaced by another tree", [&] {
      fs::rename(src, p.tmp.path() / "src-old");
      fs::copy(p.tmp.path() / "src-old", src, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
      util::write_file_atomic(src / "lib" / "deep" / "er" / "z.py", "other\n");
    });

    SUBCASE("a damaged memo is a walk, not an error") {
      for (const auto& m : fs::directory_iterator(cache / "walks")) {
        std::string text = util::read_file(m.path());
        util::write_file_atomic(m.path(), text.substr(0, text.size() / 2));
      }
      auto damaged = build(cache, 1);
      CHECK_FALSE(said("not walking"));
      CHECK(damaged.manifest.digest == build(p.tmp.path() / "cold-damaged", 1).manifest.digest);
    }
    SUBCASE("a memo whose layer left the cache: the layer is walked and built again") {
      for (const auto& k : fs::directory_iterator(cache / "keys")) {
        fs::remove(k.path());
      }
      auto rebuilt = build(cache, 1);
      CHECK(rebuilt.layers[0].rebuilt);
      CHECK(rebuilt.manifest.digest == build(p.tmp.path() / "cold-keyless", 1).manifest.digest);
    }
    SUBCASE("prune drops the memos of pruned layers, and --all every memo") {
      std::size_t memos = 0;
      for ([[maybe_unused]] const auto& m : fs::directory_iterator(cache / "walks")) {
        ++memos;
      }
      CHECK(memos == 2);
      layers::LayerCache(cache).prune(std::int64_t{1} << 40);
      CHECK(std::distance(fs::directory_iterator(cache / "walks"), fs::directory_iterator{}) == 2);
      layers::LayerCache(cache).prune(0);
      CHECK(fs::is_empty(cache / "walks"));
    }
  }

  TEST_CASE("imageio: one destination per kind; a docker-archive's RepoTags name the repository") {
    Project p;
    auto built = p.build("oci:" + p.out.string() + ":v1");
    auto src = imageio::open_source(oci::ImageRef::parse("oci:" + p.out.string() + ":v1"), {});

    CHECK(imageio::repo_tag_name(oci::ImageRef::parse("docker.io/team/tiny:1")) == "team/tiny");
    CHECK(imageio::repo_tag_name(oci::ImageRef::parse("127.0.0.1:5000/team/tiny:1")) == "127.0.0.1:5000/team/tiny");

    const fs::path layout = p.tmp.path() / "copy";
    auto res = imageio::open_destination(oci::ImageRef::parse("oci:" + layout.string()), {})->write(*src, {"a", "b"});
    CHECK(res.manifest.digest == built.manifest.digest);
    auto l = oci::OciLayout::open_existing(layout);
    CHECK(l.resolve("a").digest == built.manifest.digest);
    CHECK(l.resolve("b").digest == built.manifest.digest);

    imageio::DestinationOptions named;
    named.image_name = oci::ImageRef::parse("team/tiny");
    const std::string tar = "docker-archive:" + (p.tmp.path() / "img.tar").string();
    imageio::open_destination(oci::ImageRef::parse(tar), named)->write(*src, {"v1", "v2"});
    Strings repo_tags;
    imageio::open_source(oci::ImageRef::parse(tar), {}, &repo_tags);
    CHECK(repo_tags == Strings{"team/tiny:v1", "team/tiny:v2"});
    const std::string bare = "docker-archive:" + (p.tmp.path() / "bare.tar").string();
    imageio::open_destination(oci::ImageRef::parse(bare), {})->write(*src, {"v1"});
    imageio::open_source(oci::ImageRef::parse(bare), {}, &repo_tags);
    CHECK(repo_tags.empty()); // no repository: the image is unnamed, as a build without a name writes it

    auto e = error_of([&] { imageio::open_destination(oci::ImageRef::parse("example.com/team/tiny:1"), {}); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "cannot push to a registry"));

    // The OCI archive containerd imports: named per tag and by digest, written once.
    imageio::DestinationOptions cd;
    cd.image_name = oci::ImageRef::parse("127.0.0.1:5000/team/tiny");
    const fs::path oa = p.tmp.path() / "node.tar";
    auto w = imageio::open_destination(oci::ImageRef::parse("oci-archive:" + oa.string()), cd)->write(*src, {"v1"});
    CHECK(w.manifest.digest == built.manifest.digest);
    CHECK(w.names == Strings{"127.0.0.1:5000/team/tiny:v1", "127.0.0.1:5000/team/tiny@" + built.manifest.digest.str()});
    CHECK(w.archive_bytes == static_cast<std::int64_t>(fs::file_size(oa)));
    CHECK(w.omitted.empty());
    const auto layers = oci::manifest_from_json(oci::parse_json(src->root().bytes, "manifest")).layers;
    REQUIRE(!layers.empty());
    CHECK(w.written.size() == 2 + layers.size()); // manifest, config, layers
    cd.omit.insert(layers.front().digest.str());
    const fs::path thin_file = p.tmp.path() / "thin.tar";
    auto thin =
        imageio::open_destination(oci::ImageRef::parse("oci-archive:" + thin_file.string()), cd)->write(*src, {});
    CHECK(thin.names == Strings{"127.0.0.1:5000/team/tiny@" + built.manifest.digest.str()});
    REQUIRE(thin.omitted.size() == 1);
    CHECK(thin.omitted.front().digest == layers.front().digest);
    auto werr = error_of([&] {
      imageio::open_destination(oci::ImageRef::parse("oci-archive:" + (p.out / "index.json" / "x.tar").string()), cd)
          ->write(*src, {});
    });
    CHECK(contains(werr.what(), "writing oci-archive:" + (p.out / "index.json" / "x.tar").string()));

    // Read back as a source: by its tag, or the only image; its containerd names.
    Strings names;
    auto back = imageio::open_source(oci::ImageRef::parse("oci-archive:" + oa.string() + ":v1"), {}, &names);
    CHECK(back->root().digest == built.manifest.digest);
    CHECK(names == Strings{"127.0.0.1:5000/team/tiny:v1"});
    CHECK(imageio::open_source(oci::ImageRef::parse("oci-archive:" + oa.string()), {})->root().digest ==
          built.manifest.digest);
    auto copied = imageio::open_destination(oci::ImageRef::parse("oci:" + (p.tmp.path() / "from-oa").string()), {})
                      ->write(*back, {"v1"});
    CHECK(copied.manifest.digest == built.manifest.digest); // every blob read from the tar, hashed, the same
    auto terr = error_of([&] { imageio::open_source(oci::ImageRef::parse("oci-archive:" + oa.string() + ":v9"), {}); });
    CHECK(contains(terr.what(), "tag 'v9' not found in oci-archive " + oa.string()));
    CHECK(contains(terr.hint(), "tags present: v1"));
    // A thin archive reads, but a copy of a layer it left out names the blob.
    auto thin_img = imageio::open_source(oci::ImageRef::parse("oci-archive:" + thin_file.string()), {});
    auto lerr = error_of([&] { thin_img->hints(layers.front()); });
    CHECK(contains(lerr.what(), "has no blob " + layers.front().digest.str()));
    auto nerr = error_of([&] { imageio::open_source(oci::ImageRef::parse("oci-archive:" + tar.substr(15)), {}); });
    CHECK(contains(nerr.what(), "so not an oci-archive"));
  }

  TEST_CASE("image_sbom: the packages of an SPDX document under /var/lib/db/sbom join the image's SBOM") {
    Project p;
    util::write_file_atomic(p.tmp.path() / "spec.yaml", R"(image:
  name: example.com/team/tool
base: scratch
layers:
  - name: tool
    files:
      - from: sbom
        to: /var/lib/db/sbom/
)");
    fs::create_directories(p.tmp.path() / "sbom");
    const std::string sha(64, 'a');
    nlohmann::json doc = {
        {"spdxVersion", "SPDX-2.3"},
        {"packages",
         {{{"SPDXID", "SPDXRef-Package-libcurl4"},
           {"name", "libcurl4"},
           {"versionInfo", "7.88.1-10+deb12u12"},
           {"licenseDeclared", "curl"},
           {"checksums", {{{"algorithm", "SHA256"}, {"checksumValue", sha}}}},
           {"externalRefs",
            {{{"referenceCategory", "PACKAGE-MANAGER"},
              {"referenceType", "purl"},
              {"referenceLocator", "pkg:deb/debian/libcurl4@7.88.1-10%2Bdeb12u12?arch=amd64&distro=debian-12"}}}}},
          {{"SPDXID", "SPDXRef-no-purl"}, {"name", "left-out"}}}}};
    util::write_file_atomic(p.tmp.path() / "sbom" / "tool.spdx.json", doc.dump());
    util::write_file_atomic(p.tmp.path() / "sbom" / "notes.json", doc.dump()); // not *.spdx.json: not read
    auto rep = p.build("oci:" + p.out.string() + ":v1");
    auto img = oci::open_layout_image(p.out, "v1", "tool");
    builder::SbomOptions opt;
    opt.cache_dir = p.tmp.path() / "cache";
    opt.image_name = "example.com/team/tool";
    opt.created = "1980-01-01T00:00:00Z";
    auto in = builder::image_sbom(*img, img->root(), opt);
    std::vector<signing::SbomComponent> libs;
    for (const auto& c : in.components) {
      if (c.kind == "deb") {
        libs.push_back(c);
      }
    }
    REQUIRE(libs.size() == 1);
    CHECK(libs[0].name == "libcurl4");
    CHECK(libs[0].version == "7.88.1-10+deb12u12");
    CHECK(libs[0].purl == "pkg:deb/debian/libcurl4@7.88.1-10%2Bdeb12u12?arch=amd64&distro=debian-12");
    CHECK(libs[0].license == "curl");
    CHECK(libs[0].sha256 == sha);
    CHECK(libs[0].location == "var/lib/db/sbom/tool.spdx.json");
    CHECK(libs[0].layer == rep.layers[0].blob.digest.str());
    auto spdx = signing::spdx_document(in);
    bool listed = false;
    for (const auto& pkg : spdx["packages"]) {
      listed = listed || (pkg["name"] == "libcurl4" && pkg["licenseDeclared"] == "curl" &&
                          contains(pkg["comment"].get<std::string>(), "an SPDX document"));
    }
    CHECK(listed);
  }

  TEST_CASE("build --sign: the SBOM's subject and which outputs can carry a signature") {
    spec::BuildSpec s;
    s.name = "registry.example.com/ocr/train:1.0";
    const auto layout = oci::ImageRef::parse("oci:/x/out");
    const auto push1 = oci::ImageRef::parse("127.0.0.1:5000/team/a:1");
    const auto push2 = oci::ImageRef::parse("127.0.0.1:5000/team/b:1");
    const auto archive = oci::ImageRef::parse("docker-archive:/x/a.tar");
    CHECK(builder::sbom_subject(s, "", {layout, push1}) == "registry.example.com/ocr/train");
    CHECK(builder::sbom_subject(s, "", {push1, push2}) == "127.0.0.1:5000/team/a"); // push-only: the push's repository
    CHECK(builder::sbom_subject(s, "id.example.com/x/y:2", {push1}) == "id.example.com/x/y");
    s.name = "Paddle OCR (nightly)"; // not a reference: as written
    CHECK(builder::sbom_subject(s, "", {layout}) == "Paddle OCR (nightly)");
    s.name.clear();
    CHECK(builder::sbom_subject(s, "", {layout}) == "image");

    builder::check_signable({});                // the default layout
    builder::check_signable({archive, layout}); // one signable output is enough
    auto e = error_of([&] { builder::check_signable({archive}); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "a docker-archive cannot carry signatures"));
    CHECK(contains(e.hint(), "-o oci:DIR"));
    e = error_of([&] { builder::check_signable({oci::ImageRef::parse("oci-archive:/x/node.tar"), archive}); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "an oci-archive cannot carry signatures"));
  }

  TEST_CASE("imageio: the copy use case's checks and a docker-archive's repository") {
    using imageio::CopyMode;
    auto refs = imageio::parse_copy({CopyMode::copy, "oci:/x/in:v1", "127.0.0.1:5000/team/app:2", {"a"}, ""});
    CHECK(refs.src.kind == oci::ImageRef::Kind::oci_layout);
    CHECK(refs.credential_host() == "127.0.0.1:5000"); // the destination's
    CHECK(imageio::parse_copy({CopyMode::pull, "127.0.0.1:5001/a/b:1", "oci:/x/o", {}, ""}).credential_host() ==
          "127.0.0.1:5001");
    auto e = error_of([] { imageio::parse_copy({CopyMode::push, "oci:/x/in:v1", "oci:/x/out", {}, ""}); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "push: 'oci:/x/out' is not a registry reference"));
    e = error_of([] { imageio::parse_copy({CopyMode::pull, "oci:/x/in", "oci:/x/out", {}, ""}); });
    CHECK(contains(e.what(), "pull: 'oci:/x/in' is not a registry reference"));
    e = error_of([] {
      imageio::parse_copy({CopyMode::copy, "oci:/x/in", "example.com/a/b@sha256:" + std::string(64, 'a'), {}, ""});
    });
    CHECK(contains(e.what(), "a destination takes a tag, not a digest"));
    e = error_of([] { imageio::parse_copy({CopyMode::copy, "oci:/x/in", "oci:/x/out", {".bad"}, ""}); });
    CHECK(contains(e.what(), "--tag '.bad' is not a valid tag"));

    oci::Manifest m;
    oci::ImageConfig cfg;
    const auto layout = oci::ImageRef::parse("oci:/x/in:v1");
    CHECK(imageio::archive_repository(layout, "", m, cfg, "team/named") == "team/named");
    CHECK(imageio::archive_repository(oci::ImageRef::parse("127.0.0.1:5000/team/app:1"), "from/archive", m, cfg, "") ==
          "127.0.0.1:5000/team/app");
    CHECK(imageio::archive_repository(layout, "from/archive", m, cfg, "") == "from/archive");
    cfg.config.labels["org.opencontainers.image.title"] = "registry.example.com/ocr/train";
    CHECK(imageio::archive_repository(layout, "", m, cfg, "") == "registry.example.com/ocr/train");
    m.annotations["org.opencontainers.image.title"] = "docker.io/team/ocr";
    CHECK(imageio::archive_repository(layout, "", m, cfg, "") == "team/ocr"); // the manifest's title first
    e = error_of([&] { imageio::archive_repository(layout, "", oci::Manifest{}, oci::ImageConfig{}, ""); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.hint(), "--name"));
    e = error_of([&] { imageio::archive_repository(layout, "", m, cfg, "oci:/not/a/repo"); });
    CHECK(contains(e.what(), "--name: 'oci:/not/a/repo' is not a repository name"));
  }

  TEST_CASE("imageio: one tag policy (destination_tags)") {
    const Strings fallback = {"f1", "f2"};
    // The destination's own tag, then each --tag once.
    CHECK(imageio::destination_tags(oci::ImageRef::parse("oci:/x/out:v2"), {"a", "v2", "b"}, fallback) ==
          Strings{"v2", "a", "b"});
    // A registry's assumed "latest" is not a written tag: --tag alone, else the fallback.
    CHECK(imageio::destination_tags(oci::ImageRef::parse("example.com/team/app"), {"a"}, fallback) == Strings{"a"});
    CHECK(imageio::destination_tags(oci::ImageRef::parse("example.com/team/app"), {}, fallback) == fallback);
    CHECK(imageio::destination_tags(oci::ImageRef::parse("example.com/team/app:latest"), {}, fallback) ==
          Strings{"latest"});
    // An archive never has a tag of its own.
    CHECK(imageio::destination_tags(oci::ImageRef::parse("docker-archive:/x/a.tar"), {}, fallback) == fallback);
    CHECK(imageio::destination_tags(oci::ImageRef::parse("oci:/x/out"), {}, {}).empty());
  }

  TEST_CASE("build errors") {
    Project p;
    SUBCASE("a registry output needs registry access (the CLI gives it)") {
      auto e = error_of([&] { p.build("example.com/team/tiny:1"); });
      CHECK(e.kind() == util::ErrorKind::usage);
      CHECK(contains(e.what(), "cannot push"));
    }
    SUBCASE("an output directory that is not a layout is refused") {
      fs::create_directories(p.out);
      util::write_file_atomic(p.out / "notes.txt", "mine");
      auto e = error_of([&] { p.build("oci:" + p.out.string()); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "writing oci:" + p.out.string()));
      CHECK(util::read_file(p.out / "notes.txt") == "mine");
    }
    SUBCASE("a registry base without registry access is refused, contacting nobody") {
      auto s = spec::load(p.tmp.path() / "spec.yaml");
      s.base = "ubuntu:22.04";
      auto e = error_of([&] { build_and_publish(s, p.options("oci:" + p.out.string()), builder::Events{}); });
      CHECK(e.kind() == util::ErrorKind::usage);
      CHECK(contains(e.what(), "is in a registry, which this command cannot reach"));
    }
  }

} // TEST_SUITE

TEST_CASE("published_base: a tag the matrix lists, on a repository it lists (any host), gives that row's facts") {
  compat::Matrix m = compat::Matrix::builtin();
  const std::string tag = "2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6";
  auto row = builder::published_base(m, oci::ImageRef::parse("docker.io/paddlepaddle/paddle:" + tag));
  REQUIRE(row.has_value());
  CHECK(row->paddle == "2.6.1");
  CHECK(row->cuda == "12.0");
  CHECK(row->cudnn == "8.9");
  CHECK(row->tensorrt == "8.6");
  CHECK(row->driver_full == "525.60.13");
  CHECK(row->archs == Strings{"sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"});
  CHECK(contains(row->origin, "paddle.yaml:"));
  // A mirror keeps the path; a layout matches by its tag.
  CHECK(builder::published_base(m, oci::ImageRef::parse("127.0.0.1:5000/mirror/paddlepaddle/paddle:" + tag)));
  CHECK(builder::published_base(m, oci::ImageRef::parse("oci:bases/paddle:" + tag)));
  // Nothing is guessed: another repository, a look-alike path, an unknown tag, no tag.
  CHECK_FALSE(builder::published_base(m, oci::ImageRef::parse("example.com/team/paddle:" + tag)));
  CHECK_FALSE(builder::published_base(m, oci::ImageRef::parse("example.com/notpaddlepaddle/paddle:" + tag)));
  CHECK_FALSE(builder::published_base(m, oci::ImageRef::parse("docker.io/paddlepaddle/paddle:2.6.1-gpu-custom")));
  CHECK_FALSE(builder::published_base(m, oci::ImageRef::parse("oci:bases/paddle")));
}

} // namespace unit_builder_test
