#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "oci/digest.hpp"
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "oci/types.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace unit_oci_test {

namespace fs = std::filesystem;
using test_support::contains;
using test_support::error_of;

namespace {

util::TempDir make_temp() {
  return test_support::make_temp("pi-oci-test-");
}

const std::string k_hex_a = util::sha256_hex("a");
const std::string k_hex_b = util::sha256_hex("b");
const std::string k_hex_c = util::sha256_hex("c");

oci::Descriptor desc(const std::string& media_type, const std::string& content) {
  return oci::Descriptor{
      media_type, oci::Digest::sha256(util::sha256_hex(content)), static_cast<std::int64_t>(content.size()), {}, {}};
}

oci::Manifest sample_manifest() {
  oci::Manifest m;
  m.config = desc(oci::media::k_config, "config");
  m.layers.push_back(desc(oci::media::k_layer_gzip, "layer1"));
  oci::Descriptor l2 = desc(oci::media::k_layer_zstd, "layer2");
  l2.annotations["com.example.note"] = "second";
  m.layers.push_back(l2);
  m.annotations["org.opencontainers.image.created"] = "1980-01-01T00:00:00Z";
  return m;
}

oci::ImageConfig sample_config() {
  oci::ImageConfig c;
  c.created = "1980-01-01T00:00:00Z";
  c.architecture = "arm64";
  c.os = "linux";
  c.variant = "v8";
  c.config.user = "1000:1000";
  c.config.env = {"PATH=/usr/bin", "B=2", "A=1"};
  c.config.entrypoint = std::vector<std::string>{"python", "-m", "app"};
  c.config.cmd = std::vector<std::string>{"--help"};
  c.config.working_dir = "/app";
  c.config.labels = {{"a", "1"}, {"z", "26"}};
  c.config.exposed_ports = {"53/udp", "8080/tcp"};
  c.config.stop_signal = "SIGTERM";
  c.diff_ids = {oci::Digest::sha256(k_hex_a), oci::Digest::sha256(k_hex_b)};
  c.history = {oci::HistoryEntry{"1980-01-01T00:00:00Z", "step one", "3 entries", false},
               oci::HistoryEntry{"1980-01-01T00:00:00Z", "ENV x", "", true}};
  return c;
}

} // namespace

TEST_SUITE("oci") {

  TEST_CASE("config_from_json refuses wrong JSON types in history and rootfs with an input error") {
    // Found by fuzz_oci_json: a history entry that was not an object threw nlohmann's
    // type_error out of the reader.
    for (const char* bad : {R"({"history": [{"created_by": "x"}, "history"]})", R"({"rootfs": {"diff_ids": [7]}})",
                            R"({"rootfs": {"diff_ids": "sha256:x"}})"}) {
      CAPTURE(bad);
      try {
        (void)oci::config_from_json(nlohmann::json::parse(bad));
        FAIL("accepted");
      } catch (const util::Error& e) {
        CHECK(e.kind() == util::ErrorKind::input);
      }
    }
    auto c =
        oci::config_from_json(nlohmann::json::parse(R"({"history": [{"empty_layer": "yes"}, {"empty_layer": true}]})"));
    REQUIRE(c.history.size() == 2);
    CHECK_FALSE(c.history[0].empty_layer);
    CHECK(c.history[1].empty_layer);
  }

  TEST_CASE("Digest::parse accepts sha256 and sha512") {
    auto d = oci::Digest::parse("sha256:" + k_hex_a);
    CHECK(d.algorithm == "sha256");
    CHECK(d.hex == k_hex_a);
    CHECK(d.str() == "sha256:" + k_hex_a);
    CHECK_FALSE(d.empty());
    CHECK(d == oci::Digest::sha256(k_hex_a));

    std::string hex512(128, 'f');
    auto d512 = oci::Digest::parse("sha512:" + hex512);
    CHECK(d512.algorithm == "sha512");
    CHECK(d512.hex == hex512);
    CHECK(oci::Digest{}.empty());
  }

  TEST_CASE("Digest::parse refuses malformed digests with an input error") {
    std::string upper = k_hex_a;
    for (auto& ch : upper) {
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    const std::vector<std::string> bad = {
        "",
        k_hex_a,                             // no algorithm
        "sha256:",                           // no hex
        "sha256:" + k_hex_a.substr(1),       // 63 digits
        "sha256:" + k_hex_a + "0",           // 65 digits
        "sha256:" + upper,                   // uppercase
        "sha256:" + k_hex_a.substr(1) + "g", // not hex
        "md5:" + k_hex_a,                    // unknown algorithm
        "sha512:" + k_hex_a,                 // wrong length for sha512
        "SHA256:" + k_hex_a,                 // algorithm is case-sensitive
    };
    for (const auto& text : bad) {
      CAPTURE(text);
      auto e = error_of([&] { oci::Digest::parse(text); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "invalid digest"));
      CHECK_FALSE(e.hint().empty());
    }
  }

  TEST_CASE("ImageRef::parse: oci layouts") {
    SUBCASE("oci:DIR") {
      auto r = oci::ImageRef::parse("oci:out/app");
      CHECK(r.kind == oci::ImageRef::Kind::oci_layout);
      CHECK(r.path == "out/app");
      CHECK(r.tag.empty());
    }
    SUBCASE("oci:DIR:TAG") {
      auto r = oci::ImageRef::parse("oci:/tmp/layout:v1.2");
      CHECK(r.kind == oci::ImageRef::Kind::oci_layout);
      CHECK(r.path == "/tmp/layout");
      CHECK(r.tag == "v1.2");
    }
    SUBCASE("a colon inside the directory is not a tag") {
      auto r = oci::ImageRef::parse("oci:/a:b/c");
      CHECK(r.kind == oci::ImageRef::Kind::oci_layout);
      CHECK(r.path == "/a:b/c");
      CHECK(r.tag.empty());
    }
    SUBCASE("a trailing colon means no tag") {
      auto r = oci::ImageRef::parse("oci:dir:");
      CHECK(r.path == "dir");
      CHECK(r.tag.empty());
    }
    SUBCASE("no directory") {
      auto e = error_of([] { oci::ImageRef::parse("oci:"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "no directory"));
    }
  }

  TEST_CASE("ImageRef::parse: docker archives") {
    auto r = oci::ImageRef::parse("docker-archive:/tmp/img.tar");
    CHECK(r.kind == oci::ImageRef::Kind::docker_archive);
    CHECK(r.path == "/tmp/img.tar");
    CHECK(r.tag.empty());
    CHECK(error_of([] { oci::ImageRef::parse("docker-archive:"); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("ImageRef::parse: OCI archives, with or without a tag") {
    auto r = oci::ImageRef::parse("oci-archive:/tmp/img.tar:v1");
    CHECK(r.kind == oci::ImageRef::Kind::oci_archive);
    CHECK(r.path == "/tmp/img.tar");
    CHECK(r.tag == "v1");
    CHECK(r.str() == "oci-archive:/tmp/img.tar:v1");
    auto bare = oci::ImageRef::parse("oci-archive:/tmp/img.tar");
    CHECK(bare.path == "/tmp/img.tar");
    CHECK(bare.tag.empty());
    CHECK(bare.str() == "oci-archive:/tmp/img.tar");
    CHECK(oci::ImageRef::parse("oci-archive:/a:b/img.tar").path == "/a:b/img.tar"); // a ':' in a directory is kept
    auto e = error_of([] { oci::ImageRef::parse("oci-archive:"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "no file after 'oci-archive:'"));
  }

  TEST_CASE("ImageRef::parse: Docker Hub shorthand") {
    auto r = oci::ImageRef::parse("ubuntu");
    CHECK(r.kind == oci::ImageRef::Kind::registry);
    CHECK(r.registry == "docker.io");
    CHECK(r.repository == "library/ubuntu");
    CHECK(r.tag == "latest");
    CHECK(r.digest.empty());
    CHECK(r.name() == "docker.io/library/ubuntu");
    CHECK(r.str() == "docker.io/library/ubuntu:latest");

    auto t = oci::ImageRef::parse("docker://python:3.11-slim");
    CHECK(t.registry == "docker.io");
    CHECK(t.repository == "library/python");
    CHECK(t.tag == "3.11-slim");

    auto u = oci::ImageRef::parse("someuser/app");
    CHECK(u.registry == "docker.io");
    CHECK(u.repository == "someuser/app");
    CHECK(u.tag == "latest");
  }

  TEST_CASE("ImageRef::parse: host with port, tag and digest") {
    std::string digest = "sha256:" + k_hex_a;
    auto r = oci::ImageRef::parse("localhost:5000/x/y:1@" + digest);
    CHECK(r.kind == oci::ImageRef::Kind::registry);
    CHECK(r.registry == "localhost:5000");
    CHECK(r.repository == "x/y");
    CHECK(r.tag == "1");
    CHECK(r.digest == digest);
    CHECK(r.str() == "localhost:5000/x/y:1@" + digest);

    auto pinned = oci::ImageRef::parse("registry.example.com/team/app@" + digest);
    CHECK(pinned.registry == "registry.example.com");
    CHECK(pinned.repository == "team/app");
    CHECK(pinned.tag.empty()); // no implicit latest with a digest
    CHECK(pinned.digest == digest);

    auto local = oci::ImageRef::parse("localhost/app");
    CHECK(local.registry == "localhost");
    CHECK(local.repository == "app");

    auto bad_digest = error_of([] { oci::ImageRef::parse("ubuntu@sha256:1234"); });
    CHECK(bad_digest.kind() == util::ErrorKind::input);
  }

  TEST_CASE("ImageRef::parse: Docker Hub host aliases are normalised") {
    auto r = oci::ImageRef::parse("index.docker.io/a/b");
    CHECK(r.registry == "docker.io");
    CHECK(r.repository == "a/b");
    CHECK(r.tag == "latest");
    CHECK(oci::ImageRef::parse("registry-1.docker.io/ubuntu").repository == "library/ubuntu");
    CHECK(oci::ImageRef::parse("registry-1.docker.io/ubuntu").registry == "docker.io");
  }

  TEST_CASE("ImageRef::parse refuses invalid repositories, tags and transports") {
    SUBCASE("uppercase repository") {
      auto e = error_of([] { oci::ImageRef::parse("Ubuntu"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "invalid image reference 'Ubuntu'"));
      CHECK(contains(e.what(), "path component"));
      CHECK(error_of([] { oci::ImageRef::parse("example.com/Team/app:1"); }).kind() == util::ErrorKind::input);
    }
    SUBCASE("invalid tags") {
      for (const std::string& text :
           std::vector<std::string>{"ubuntu:-bad", "ubuntu:", "ubuntu:a+b", "ubuntu:" + std::string(129, 'a')}) {
        CAPTURE(text);
        auto e = error_of([&] { oci::ImageRef::parse(text); });
        CHECK(e.kind() == util::ErrorKind::input);
        CHECK(contains(e.what(), "tag"));
      }
      CHECK_NOTHROW(oci::ImageRef::parse("ubuntu:" + std::string(128, 'a')));
    }
    SUBCASE("empty components") {
      CHECK(error_of([] { oci::ImageRef::parse(""); }).kind() == util::ErrorKind::input);
      CHECK(error_of([] { oci::ImageRef::parse("example.com/a//b"); }).kind() == util::ErrorKind::input);
      CHECK(error_of([] { oci::ImageRef::parse(":tag"); }).kind() == util::ErrorKind::input);
    }
    SUBCASE("unsupported transports") {
      auto e = error_of([] { oci::ImageRef::parse("dir:/x"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "not supported"));
      CHECK(contains(error_of([] { oci::ImageRef::parse("containers-storage:x"); }).what(), "not supported"));
    }
  }

  TEST_CASE("is_valid_tag") {
    CHECK(oci::is_valid_tag("latest"));
    CHECK(oci::is_valid_tag("v1.2.3-rc_1"));
    CHECK(oci::is_valid_tag("_x"));
    CHECK_FALSE(oci::is_valid_tag(""));
    CHECK_FALSE(oci::is_valid_tag(".x"));
    CHECK_FALSE(oci::is_valid_tag("-x"));
    CHECK_FALSE(oci::is_valid_tag("a/b"));
    CHECK_FALSE(oci::is_valid_tag("a:b"));
  }

  TEST_CASE("ImageRef::str() round-trips through parse") {
    const std::vector<std::string> texts = {
        "oci:out/app",
        "oci:/tmp/layout:v1",
        "oci:/a:b/c",
        "docker-archive:/tmp/x.tar",
        "ubuntu",
        "docker://ubuntu:22.04",
        "index.docker.io/a/b",
        "localhost:5000/x/y:1@sha256:" + k_hex_a,
        "ghcr.io/org/repo@sha256:" + k_hex_b,
        "example.com:443/deep/path/name:tag_1",
    };
    for (const auto& t : texts) {
      CAPTURE(t);
      auto r = oci::ImageRef::parse(t);
      auto again = oci::ImageRef::parse(r.str());
      CHECK(again == r);
      CHECK(again.str() == r.str());
    }
  }

  TEST_CASE("Manifest JSON round trip") {
    oci::Manifest m = sample_manifest();
    oci::Descriptor with_platform = desc(oci::media::k_layer_tar, "layer3");
    with_platform.platform = oci::Platform{"arm64", "linux", "v8"};
    m.layers.push_back(with_platform);
    auto j = oci::to_json(m);
    CHECK(j["schemaVersion"] == 2);
    CHECK(j["mediaType"] == oci::media::k_manifest);
    oci::Manifest back = oci::manifest_from_json(j);
    CHECK(back == m);
    // Through canonical bytes as well.
    CHECK(oci::manifest_from_json(oci::parse_json(oci::canonical(j), "manifest")) == m);
  }

  TEST_CASE("Index JSON round trip") {
    oci::Index i;
    oci::Descriptor a = desc(oci::media::k_manifest, "m1");
    a.annotations[oci::k_ref_name_annotation] = "v1";
    a.platform = oci::Platform{"amd64", "linux", ""};
    oci::Descriptor b = desc(oci::media::k_manifest, "m2");
    i.manifests = {a, b};
    i.annotations["x"] = "y";
    auto j = oci::to_json(i);
    CHECK(j["mediaType"] == oci::media::k_index);
    CHECK(oci::index_from_json(j) == i);
    CHECK(oci::index_from_json(oci::to_json(oci::Index{})) == oci::Index{});
  }

  TEST_CASE("ImageConfig JSON round trip") {
    oci::ImageConfig c = sample_config();
    auto j = oci::to_json(c);
    CHECK(j["config"]["Env"].size() == 3);
    CHECK(j["rootfs"]["type"] == "layers");
    CHECK(j["config"]["ExposedPorts"].contains("8080/tcp"));
    CHECK(oci::config_from_json(j) == c);

    SUBCASE("absent entrypoint and cmd stay absent; empty lists stay empty lists") {
      oci::ImageConfig d;
      d.created = "x";
      CHECK(oci::config_from_json(oci::to_json(d)) == d);
      d.config.entrypoint = std::vector<std::string>{};
      auto back = oci::config_from_json(oci::to_json(d));
      REQUIRE(back.config.entrypoint.has_value());
      CHECK(back.config.entrypoint->empty());
      CHECK_FALSE(back.config.cmd.has_value());
    }
  }

  TEST_CASE("ImageConfig env helpers") {
    oci::ImageConfig c;
    c.set_env("PATH", "/bin");
    c.set_env("A", "1");
    c.set_env("PATH", "/usr/bin:/bin");
    CHECK(c.config.env == std::vector<std::string>{"PATH=/usr/bin:/bin", "A=1"});
    CHECK(c.get_env("PATH") == std::optional<std::string>("/usr/bin:/bin"));
    CHECK_FALSE(c.get_env("PAT").has_value());
    CHECK_FALSE(c.get_env("MISSING").has_value());
  }

  TEST_CASE("from_json refuses malformed documents with input errors") {
    using nlohmann::json;
    CHECK(error_of([] { oci::manifest_from_json(json::parse(R"({"layers":[]})")); }).kind() == util::ErrorKind::input);
    CHECK(error_of([] { oci::index_from_json(json::parse(R"({"manifests":{}})")); }).kind() == util::ErrorKind::input);
    auto no_size = error_of([] {
      oci::descriptor_from_json(json{{"mediaType", "x"}, {"digest", "sha256:" + k_hex_a}});
    });
    CHECK(contains(no_size.what(), "size"));
    CHECK(error_of([] {
            oci::descriptor_from_json(json{{"mediaType", "x"}, {"digest", "sha256:" + k_hex_a}, {"size", -1}});
          }).kind() == util::ErrorKind::input);
    CHECK(error_of([] {
            oci::descriptor_from_json(json{{"mediaType", 5}, {"digest", "sha256:" + k_hex_a}, {"size", 1}});
          }).kind() == util::ErrorKind::input);
    auto bad_json = error_of([] { oci::parse_json("{not json", "thing.json"); });
    CHECK(bad_json.kind() == util::ErrorKind::input);
    CHECK(contains(bad_json.what(), "thing.json is not valid JSON"));
  }

  TEST_CASE("canonical() is compact with sorted keys") {
    auto j = nlohmann::json::parse("{ \"zeta\": 1,\n \"alpha\": {\"b\": [1, 2], \"a\": \"x y\"}, \"mid\": null }");
    CHECK(oci::canonical(j) == R"({"alpha":{"a":"x y","b":[1,2]},"mid":null,"zeta":1})");

    std::string m = oci::canonical(oci::to_json(sample_manifest()));
    CHECK_FALSE(contains(m, "\n"));
    CHECK_FALSE(contains(m, "\": "));
    CHECK_FALSE(contains(m, ", "));
    auto pos = [&](const std::string& key) { return m.find("\"" + key + "\":"); };
    CHECK(pos("annotations") < pos("config"));
    CHECK(pos("config") < pos("layers"));
    // The top-level mediaType is the last one (nested descriptors have their own).
    CHECK(pos("layers") < m.rfind("\"mediaType\":"));
    CHECK(m.find("\"schemaVersion\":2") != std::string::npos);
    CHECK(m.find("\"schemaVersion\":2") > m.rfind("\"mediaType\":"));
    // Inside a descriptor: digest < mediaType < size.
    auto cfg = m.find("\"config\":{");
    CHECK(m.find("\"digest\":", cfg) < m.find("\"mediaType\":", cfg));
    CHECK(m.find("\"mediaType\":", cfg) < m.find("\"size\":", cfg));
    // Equal values give equal bytes regardless of construction order.
    oci::ImageConfig a = sample_config();
    oci::ImageConfig b = sample_config();
    b.config.labels.clear();
    b.config.labels["z"] = "26";
    b.config.labels["a"] = "1";
    CHECK(oci::canonical(oci::to_json(a)) == oci::canonical(oci::to_json(b)));
  }

  TEST_CASE("OciLayout::open_or_create on an empty directory creates a layout") {
    auto tmp = make_temp();
    auto layout = oci::OciLayout::open_or_create(tmp.path());
    CHECK(layout.dir() == tmp.path());
    CHECK(fs::is_regular_file(tmp.path() / "oci-layout"));
    CHECK(oci::parse_json(util::read_file(tmp.path() / "oci-layout"), "x")["imageLayoutVersion"] == "1.0.0");
    CHECK(fs::is_regular_file(tmp.path() / "index.json"));
    CHECK(fs::is_directory(tmp.path() / "blobs" / "sha256"));
    CHECK(layout.read_index().manifests.empty());
    // Opening again finds the existing layout.
    CHECK_NOTHROW(oci::OciLayout::open_existing(tmp.path()));
    CHECK_NOTHROW(oci::OciLayout::open_or_create(tmp.path()));

    SUBCASE("a directory that does not exist yet is created") {
      auto l2 = oci::OciLayout::open_or_create(tmp.path() / "new" / "dir");
      CHECK(fs::is_regular_file(tmp.path() / "new" / "dir" / "oci-layout"));
      CHECK(l2.read_index().manifests.empty());
    }
  }

  TEST_CASE("OciLayout::open_or_create refuses a non-empty directory that is not a layout") {
    auto tmp = make_temp();
    util::write_file_atomic(tmp.path() / "README", "hello");
    auto e = error_of([&] { oci::OciLayout::open_or_create(tmp.path()); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "not an OCI image layout"));
    // Nothing was written into it.
    CHECK_FALSE(fs::exists(tmp.path() / "oci-layout"));
    CHECK_FALSE(fs::exists(tmp.path() / "index.json"));

    SUBCASE("a regular file is refused too") {
      auto f = error_of([&] { oci::OciLayout::open_or_create(tmp.path() / "README"); });
      CHECK(f.kind() == util::ErrorKind::input);
    }
    SUBCASE("open_existing refuses a directory without oci-layout") {
      auto g = error_of([&] { oci::OciLayout::open_existing(tmp.path()); });
      CHECK(g.kind() == util::ErrorKind::input);
      CHECK(contains(g.what(), "no oci-layout file"));
    }
  }

  TEST_CASE("OciLayout::open_existing refuses an unsupported layout version") {
    auto tmp = make_temp();
    util::write_file_atomic(tmp.path() / "oci-layout", R"({"imageLayoutVersion":"2.0.0"})");
    auto e = error_of([&] { oci::OciLayout::open_existing(tmp.path()); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "unsupported imageLayoutVersion"));
  }

  TEST_CASE("OciLayout::add_manifest and resolve") {
    auto tmp = make_temp();
    auto layout = oci::OciLayout::open_or_create(tmp.path());
    oci::Descriptor a =
        layout.blobs().put_bytes(oci::media::k_manifest, oci::canonical(oci::to_json(sample_manifest())));
    oci::Manifest other = sample_manifest();
    other.annotations["x"] = "y";
    oci::Descriptor b = layout.blobs().put_bytes(oci::media::k_manifest, oci::canonical(oci::to_json(other)));
    REQUIRE(a.digest != b.digest);

    SUBCASE("empty tag with one manifest resolves to it") {
      layout.add_manifest(a, {"v1"});
      auto d = layout.resolve("");
      CHECK(d.digest == a.digest);
      CHECK(d.annotations.at(oci::k_ref_name_annotation) == "v1");
      CHECK(layout.read_manifest(d) == sample_manifest());
    }
    SUBCASE("tags resolve; a same-tag entry is replaced") {
      layout.add_manifest(a, {"v1", "latest"});
      CHECK(layout.read_index().manifests.size() == 2);
      CHECK(layout.resolve("latest").digest == a.digest);
      layout.add_manifest(b, {"latest"});
      auto index = layout.read_index();
      REQUIRE(index.manifests.size() == 2);
      int latest_count = 0;
      for (const auto& m : index.manifests) {
        if (m.annotations.at(oci::k_ref_name_annotation) == "latest") {
          ++latest_count;
          CHECK(m.digest == b.digest);
        }
      }
      CHECK(latest_count == 1);
      CHECK(layout.resolve("latest").digest == b.digest);
      CHECK(layout.resolve("v1").digest == a.digest);
      // The same layout opened afresh sees the same index (it was written to disk).
      CHECK(oci::OciLayout::open_existing(tmp.path()).resolve("latest").digest == b.digest);

      SUBCASE("empty tag with several manifests is refused, naming the tags") {
        auto e = error_of([&] { layout.resolve(""); });
        CHECK(e.kind() == util::ErrorKind::input);
        CHECK(contains(e.what(), "holds 2 manifests"));
        CHECK(contains(e.hint(), "latest"));
        CHECK(contains(e.hint(), "v1"));
      }
    }
    SUBCASE("unknown tag") {
      layout.add_manifest(a, {"v1"});
      auto e = error_of([&] { layout.resolve("v2"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "tag 'v2' not found"));
      CHECK(contains(e.hint(), "v1"));
    }
    SUBCASE("empty layout") {
      auto e = error_of([&] { layout.resolve(""); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.hint(), "empty"));
    }
    SUBCASE("untagged manifests are not duplicated") {
      layout.add_manifest(a, {});
      layout.add_manifest(a, {});
      CHECK(layout.read_index().manifests.size() == 1);
      CHECK(layout.resolve("").digest == a.digest);
    }
  }

  TEST_CASE("OciLayout::read_config reads the config named by a manifest") {
    auto tmp = make_temp();
    auto layout = oci::OciLayout::open_or_create(tmp.path());
    oci::ImageConfig cfg = sample_config();
    oci::Manifest m;
    m.config = layout.blobs().put_bytes(oci::media::k_config, oci::canonical(oci::to_json(cfg)));
    CHECK(layout.read_config(m) == cfg);
    oci::Descriptor idx{oci::media::k_index, m.config.digest, 1, {}, {}};
    CHECK(error_of([&] { layout.read_manifest(idx); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("BlobStore put_bytes and read_small verify digests") {
    auto tmp = make_temp();
    oci::BlobStore store(tmp.path());
    std::string content = "{\"hello\":\"world\"}";
    oci::Descriptor d = store.put_bytes("application/json", content);
    CHECK(d.media_type == "application/json");
    CHECK(d.digest == oci::Digest::sha256(util::sha256_hex(content)));
    CHECK(d.size == static_cast<std::int64_t>(content.size()));
    CHECK(store.blob_path(d.digest) == tmp.path() / "blobs" / "sha256" / d.digest.hex);
    CHECK(store.has(d.digest));
    CHECK(store.read_small(d.digest) == content);
    // Storing the same bytes again is a no-op with the same descriptor.
    CHECK(store.put_bytes("application/json", content) == d);
    // No temporaries left behind.
    CHECK(fs::is_empty(tmp.path() / ".tmp"));

    SUBCASE("a tampered blob is an integrity error") {
      std::string tampered = content;
      tampered[2] = 'H';
      {
        // Replace the blob's bytes in place (same size, different content).
        util::AtomicFile f(store.blob_path(d.digest));
        f.write(tampered);
        f.commit();
      }
      auto e = error_of([&] { store.read_small(d.digest); });
      CHECK(e.kind() == util::ErrorKind::integrity);
      CHECK(contains(e.what(), d.digest.str()));
      CHECK(contains(e.what(), "does not match its digest"));
    }
    SUBCASE("a missing blob is an input error") {
      auto missing = oci::Digest::sha256(k_hex_c);
      CHECK_FALSE(store.has(missing));
      auto e = error_of([&] { store.read_small(missing); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "missing"));
    }
    SUBCASE("a blob over the size limit is refused") {
      auto e = error_of([&] { store.read_small(d.digest, 4); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "too large"));
    }
  }

  TEST_CASE("BlobStore begin_write/commit and put_file") {
    auto tmp = make_temp();
    oci::BlobStore store(tmp.path() / "store");
    auto w = store.begin_write();
    w->write("streamed");
    auto digest = oci::Digest::sha256(util::sha256_hex("streamed"));
    store.commit(*w, digest);
    CHECK(store.read_small(digest) == "streamed");

    util::write_file_atomic(tmp.path() / "src", "from a file");
    auto d2 = oci::Digest::sha256(util::sha256_hex("from a file"));
    store.put_file(d2, tmp.path() / "src");
    CHECK(store.read_small(d2) == "from a file");
    CHECK(fs::is_empty(tmp.path() / "store" / ".tmp"));
  }

} // TEST_SUITE

TEST_CASE("Docker Hub's aliases are one registry, docker.io") {
  for (const char* h : {"docker.io", "index.docker.io", "registry-1.docker.io"}) {
    CHECK(oci::is_docker_hub(h));
    CHECK(oci::canonical_registry(h) == "docker.io");
  }
  for (const char* h : {"docker.io:443", "mirror.docker.io", "ghcr.io", "127.0.0.1:5000", ""}) {
    CHECK_FALSE(oci::is_docker_hub(h));
    CHECK(oci::canonical_registry(h) == h);
  }
  CHECK(oci::ImageRef::parse("index.docker.io/ubuntu:22.04").str() == "docker.io/library/ubuntu:22.04");
  CHECK(oci::ImageRef::parse("registry-1.docker.io/a/b").registry == "docker.io");
}

TEST_CASE("login_host: the host login and logout take, from a host, a URL or a reference") {
  CHECK(oci::login_host("127.0.0.1:5000") == "127.0.0.1:5000");
  CHECK(oci::login_host("https://registry.example.com/v2/") == "registry.example.com");
  CHECK(oci::login_host("http://127.0.0.1:5000") == "127.0.0.1:5000");
  CHECK(oci::login_host("docker://index.docker.io/library/ubuntu") == "docker.io");
  CHECK(oci::login_host("registry.example.com/team/app:1") == "registry.example.com");
  for (const char* bad : {"", "https://", "/path", "user@host", "a b"}) {
    CAPTURE(bad);
    auto e = error_of([&] { oci::login_host(bad); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(std::string(e.what()) == "'" + std::string(bad) + "' is not a registry host");
    CHECK(std::string(e.hint()) == "e.g. registry.example.com or 127.0.0.1:5000");
  }
}

} // namespace unit_oci_test
