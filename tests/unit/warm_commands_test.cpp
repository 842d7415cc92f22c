// What the warm commands decide before and after they reach a registry (issue 36 moved
// it out of cli/cmd_warm.cpp): registry targets named by flags, push's flags that go
// together, plan's baselines, verify's digests and failures, manifests' command, sizes,
// header and report.
#include "oci/layout.hpp"
#include "oci/layout_image.hpp"
#include "support.hpp"
#include "util/sha256.hpp"
#include "warm/manifests.hpp"
#include "warm/mirror.hpp"
#include "warm/plan.hpp"
#include "warm/target.hpp"
#include "warm/verify.hpp"

#include <doctest/doctest.h>

namespace unit_warm_commands_test {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;
using util::ErrorKind;

namespace {

const std::string k_hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string k_digest = "sha256:" + k_hex;

oci::Digest digest_of(const std::string& s) {
  return oci::Digest::sha256(util::sha256_hex(s));
}

// The error text of f, which must throw a util::Error of `kind`.
template <typename F> std::string usage_text(ErrorKind kind, F&& f) {
  util::Error e = error_of(std::forward<F>(f));
  CHECK(e.kind() == kind);
  return e.what();
}

warm::LayerPlan layer(bool shared, std::optional<bool> snapshot_shared) {
  warm::LayerPlan l;
  l.shared = shared;
  l.snapshot_shared = snapshot_shared;
  return l;
}

warm::BlobCheck blob(const std::string& kind, warm::BlobStatus status, const oci::Digest& d,
                     const std::string& detail) {
  warm::BlobCheck b;
  b.kind = kind;
  b.status = status;
  b.desc.digest = d;
  b.detail = detail;
  return b;
}

} // namespace

TEST_SUITE("warm commands") {
  TEST_CASE("parse_target: host[:port] or an http(s) URL without a path; http:// consents to plain HTTP") {
    auto t = warm::parse_target("mirror.cluster.local:5000", "--to");
    CHECK(t.host == "mirror.cluster.local:5000");
    CHECK_FALSE(t.plain_http);
    t = warm::parse_target("http://127.0.0.1:5000", "--to");
    CHECK(t.host == "127.0.0.1:5000");
    CHECK(t.plain_http);
    t = warm::parse_target("https://cache.example.com/", "--through");
    CHECK(t.host == "cache.example.com");
    CHECK_FALSE(t.plain_http);
    // Unlike login's host, no Docker Hub aliasing and no scheme but http(s).
    CHECK(warm::parse_target("docker.io", "--registry").host == "docker.io");
  }

  TEST_CASE("parse_target: a path, credentials, a query, a fragment or another scheme is a usage error") {
    CHECK(usage_text(ErrorKind::usage, [] { warm::parse_target("mirror:5000/team", "--to"); }) ==
          "--to 'mirror:5000/team' is not a registry host (the repository path is the image's own)");
    auto e = error_of([] { warm::parse_target("ftp://mirror", "--registry"); });
    CHECK(e.hint() == "e.g. --registry mirror.cluster.local:5000 or --registry http://127.0.0.1:5000");
    // The text is shown as util::redact_url writes it back.
    for (const auto& pair : {std::pair<std::string, std::string>{"http://m:5000?x=1", "http://m:5000/?x=1"},
                             {"http://m:5000#top", "http://m:5000/#top"},
                             {"", ""},
                             {"http://", "http://"}}) {
      const std::string& bad = pair.first; // a named variable: clang 14 cannot capture a structured binding
      const std::string& shown = pair.second;
      CAPTURE(bad);
      CHECK(usage_text(ErrorKind::usage, [&] { warm::parse_target(bad, "--through"); }) ==
            "--through '" + shown + "' is not a registry host (the repository path is the image's own)");
    }
    // Credentials never reach the message.
    std::string with_password = usage_text(ErrorKind::usage, [] { warm::parse_target("http://u:s3cret@m", "--to"); });
    CHECK(contains(with_password, "is not a registry host"));
    CHECK_FALSE(contains(with_password, "s3cret"));
  }

  TEST_CASE("parse_registry_image and reference_of") {
    oci::ImageRef ref = warm::parse_registry_image("registry.example.com/team/ocr:1.4", "IMAGE");
    CHECK(ref.registry == "registry.example.com");
    CHECK(ref.repository == "team/ocr");
    CHECK(warm::reference_of(ref) == "1.4");
    CHECK(warm::reference_of(warm::parse_registry_image("r.example.com/a/b:1@" + k_digest, "IMAGE")) == k_digest);
    CHECK(warm::reference_of(warm::parse_registry_image("r.example.com/a/b", "IMAGE")) == "latest");
    auto e = error_of([] { warm::parse_registry_image("oci:some/dir:v1", "--name"); });
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) == "--name 'oci:some/dir:v1' is not a registry reference");
    CHECK(e.hint() == "warm works on the repository path nodes pull from, e.g. registry.example.com/team/ocr:1.4");
  }

  TEST_CASE("push_target: --to a mirror, with --tag the image's tag") {
    warm::PushTarget p = warm::push_target({"up.example.com/team/ocr:1.4", "http://127.0.0.1:5000", "", true});
    CHECK(p.to_mirror);
    CHECK(p.target.host == "127.0.0.1:5000");
    CHECK(p.target.plain_http);
    CHECK(p.ref.str() == "up.example.com/team/ocr:1.4");
    CHECK(p.tags == std::vector<std::string>{"1.4"});
    // Without --tag the manifest goes by digest only.
    CHECK(warm::push_target({"up.example.com/team/ocr:1.4", "mirror:5000", "", false}).tags.empty());
    warm::PushTarget c = warm::push_target({"up.example.com/team/ocr:1.4", "", "cache.example.com", false});
    CHECK_FALSE(c.to_mirror);
    CHECK(c.target.host == "cache.example.com");
    CHECK_FALSE(c.target.plain_http);
    CHECK(c.tags.empty());
  }

  TEST_CASE("push_target: the flags that go together, in the order they are checked") {
    const std::string img = "up.example.com/team/ocr:1.4";
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({img, "", "", false});
          }) == "warm push needs one of --to MIRROR or --through URL");
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({img, "m:1", "c:2", true});
          }) == "warm push needs one of --to MIRROR or --through URL");
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({"oci:dir", "m:1", "", false});
          }) == "IMAGE 'oci:dir' is not a registry reference");
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({"up.example.com/o@" + k_digest, "m:1", "", true});
          }) == "--tag puts IMAGE's tag on the mirror, and up.example.com/o@" + k_digest + " has none");
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({img, "", "c:2", true});
          }) == "--tag goes with --to (a pull-through cache takes no pushes)");
    CHECK(usage_text(ErrorKind::usage, [&] {
            warm::push_target({img, "", "c:2/path", false});
          }) == "--through 'c:2/path' is not a registry host (the repository path is the image's own)");
    auto own = error_of([&] { warm::push_target({img, "https://up.example.com", "", false}); });
    CHECK(std::string(own.what()) == "--to https://up.example.com is IMAGE's own registry");
    CHECK(own.hint() == "name the mirror nodes pull from, e.g. --to mirror.cluster.local:5000");
  }

  TEST_CASE("push reports: the mirror's and the cache's JSON") {
    oci::ImageRef ref = warm::parse_registry_image("up.example.com/team/ocr:1.4", "IMAGE");
    warm::MirrorResult m;
    m.copy.manifest.digest = digest_of("manifest");
    m.copy.refs = {"mirror:5000/team/ocr@" + digest_of("manifest").str()};
    m.copy.attachments = 2;
    m.tags = {"1.4"};
    json j = warm::to_json(m, ref, "mirror:5000");
    CHECK(j == json({{"image", "up.example.com/team/ocr:1.4"},
                     {"mirror", "mirror:5000"},
                     {"repository", "team/ocr"},
                     {"digest", digest_of("manifest").str()},
                     {"refs", m.copy.refs},
                     {"tags", {"1.4"}},
                     {"attachments", 2}}));

    warm::ThroughResult t;
    t.top.digest = digest_of("top");
    t.manifests = {digest_of("top")};
    warm::ThroughBlob b;
    b.desc.digest = digest_of("layer");
    b.desc.size = 10;
    b.kind = "layer";
    b.read = 10;
    t.blobs = {b};
    t.bytes = 42;
    t.attachments = 1;
    j = warm::to_json(t, ref, "cache:5000");
    CHECK(j == json({{"image", "up.example.com/team/ocr:1.4"},
                     {"cache", "cache:5000"},
                     {"repository", "team/ocr"},
                     {"digest", digest_of("top").str()},
                     {"manifests", {digest_of("top").str()}},
                     {"blobs", {{{"digest", digest_of("layer").str()}, {"kind", "layer"}, {"size", 10}, {"read", 10}}}},
                     {"attachments", 1},
                     {"bytes", 42}}));
  }

  TEST_CASE("plan: one baseline; a shared blob above a differing layer is unpacked again") {
    warm::check_one_baseline("", "");
    warm::check_one_baseline("r.example.com/a:1", "");
    warm::check_one_baseline("", "have.txt");
    auto e = error_of([] { warm::check_one_baseline("r.example.com/a:1", "have.txt"); });
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) == "--against and --have are two baselines; give one");
    CHECK(e.hint() == "--against REF compares with an image the node runs; --have FILE with what its store holds");

    CHECK(warm::unpacks_again(layer(true, false)));
    CHECK_FALSE(warm::unpacks_again(layer(true, true)));
    CHECK_FALSE(warm::unpacks_again(layer(true, std::nullopt))); // --have: snapshots unknown
    CHECK_FALSE(warm::unpacks_again(layer(false, false)));       // new anyway
  }

  TEST_CASE("verify: one store; the digest a content directory is checked for") {
    warm::check_one_store("mirror:5000", "");
    warm::check_one_store("", "/var/lib/containerd");
    for (const auto& pair : {std::pair<std::string, std::string>{"", ""}, {"m:1", "/d"}}) {
      const std::string& reg = pair.first;
      const std::string& dir = pair.second;
      CHECK(usage_text(ErrorKind::usage, [&] { warm::check_one_store(reg, dir); }) ==
            "warm verify needs one of --registry URL or --content-dir DIR");
    }
    CHECK(warm::content_dir_digest(k_digest).str() == k_digest);
    CHECK(warm::content_dir_digest("r.example.com/a/b@" + k_digest).str() == k_digest);
    CHECK(warm::content_dir_digest("r.example.com/a/b:1@" + k_digest).str() == k_digest);
    auto tag = error_of([] { warm::content_dir_digest("r.example.com/a/b:1"); });
    CHECK(tag.kind() == ErrorKind::usage);
    CHECK(std::string(tag.what()) ==
          "--content-dir needs IMAGE pinned by digest, and 'r.example.com/a/b:1' names a tag: a content store keeps "
          "blobs, not tags");
    CHECK(tag.hint() == "use REG/REPO@sha256:... (paddle-image inspect r.example.com/a/b:1 --json prints the "
                        "digest), or check a registry with --registry");
    CHECK(contains(usage_text(ErrorKind::usage, [] { warm::content_dir_digest("oci:dir@" + k_digest); }),
                   "--content-dir needs IMAGE pinned by digest"));
    // A bad digest is named as IMAGE's.
    CHECK(contains(error_of([] { warm::content_dir_digest("sha256:0123"); }).what(), "IMAGE: "));
  }

  TEST_CASE("verify: a tag checked on another registry is resolved upstream first") {
    auto ref = [](const std::string& s) { return warm::parse_registry_image(s, "IMAGE"); };
    CHECK(warm::resolves_upstream(ref("up.example.com/a:1"), "mirror:5000"));
    CHECK_FALSE(warm::resolves_upstream(ref("up.example.com/a:1"), "up.example.com"));
    CHECK_FALSE(warm::resolves_upstream(ref("up.example.com/a@" + k_digest), "mirror:5000"));
    CHECK_FALSE(warm::resolves_upstream(ref("up.example.com/a:1@" + k_digest), "mirror:5000"));
  }

  TEST_CASE("verify: a failure names every missing and corrupt blob; the hint follows the kind") {
    warm::VerifyReport r;
    r.target = "registry m/a";
    r.digest = digest_of("top");
    r.blobs = {blob("manifest", warm::BlobStatus::ok, digest_of("top"), ""),
               blob("layer", warm::BlobStatus::missing, digest_of("l1"), "404"),
               blob("config", warm::BlobStatus::corrupt, digest_of("c"), "sha256 mismatch"),
               blob("manifest", warm::BlobStatus::missing, oci::Digest{}, "")};
    r.ok = 1;
    r.missing = 2;
    r.corrupt = 1;
    CHECK(warm::failure_message(r, "m/a@x") == r.summary() + " for m/a@x (" + digest_of("top").str() + ")" +
                                                   "\n  missing layer " + digest_of("l1").str() + ": 404" +
                                                   "\n  corrupt config " + digest_of("c").str() + ": sha256 mismatch" +
                                                   "\n  missing manifest (manifest)");
    CHECK(warm::failure_hint(ErrorKind::integrity) ==
          "a corrupt blob must be deleted from the store and fetched again (warm push --to, or ctr images import of "
          "a full archive)");
    CHECK(warm::failure_hint(ErrorKind::incomplete) ==
          "warm it first: paddle-image warm push --to (a mirror) or warm export + ctr images import (a node)");
  }

  TEST_CASE("manifests: --command as words or a JSON array of strings") {
    CHECK(warm::parse_command("/bin/sh -c  true") == std::vector<std::string>{"/bin/sh", "-c", "true"});
    CHECK(warm::parse_command("  ").empty());
    CHECK(warm::parse_command(R"x(["python3", "-c", "print(1 2)"])x") ==
          std::vector<std::string>{"python3", "-c", "print(1 2)"});
    for (const char* bad : {"[]", "[1]", R"(["a", 2])", "[not json", R"(["a"] x)"}) {
      CAPTURE(bad);
      auto e = error_of([&] { warm::parse_command(bad); });
      CHECK(e.kind() == ErrorKind::usage);
      CHECK(std::string(e.what()) == "--command '" + std::string(bad) + "' is not a JSON array of strings");
      CHECK(e.hint() == R"(e.g. --command '["python3", "-c", "pass"]' or --command /bin/true)");
    }
  }

  TEST_CASE("manifests: what a node pulls is the manifest, the config and the layers") {
    auto tmp = test_support::make_temp("warm-bytes");
    auto dir = tmp.path() / "layout";
    std::int64_t expect = 0;
    {
      auto lock = oci::OciLayout::lock_dir(dir);
      auto layout = oci::OciLayout::open_or_create(dir);
      oci::ImageConfig cfg;
      oci::Manifest m;
      for (const std::string l : {"layer one", "second layer, longer"}) {
        oci::Descriptor d = layout.blobs().put_bytes(oci::media::k_layer_tar, l);
        m.layers.push_back(d);
        cfg.diff_ids.push_back(d.digest);
        expect += static_cast<std::int64_t>(l.size());
      }
      m.config = layout.blobs().put_bytes(oci::media::k_config, oci::canonical(oci::to_json(cfg)));
      std::string mj = oci::canonical(oci::to_json(m));
      layout.add_manifest(layout.blobs().put_bytes(oci::media::k_manifest, mj), {"v1"});
      expect += m.config.size + static_cast<std::int64_t>(mj.size());
    }
    auto img = oci::open_layout_image(dir, "v1", "oci:layout:v1");
    CHECK(warm::pull_bytes(*img, oci::CopyOptions{}) == expect);
  }

  TEST_CASE("manifests: the YAML's header and the JSON report") {
    warm::ManifestsInput in;
    in.kind = warm::ManifestKind::daemonset;
    in.images = {{"r.example.com/a@" + k_digest, "r.example.com/a:1", 1234}};
    in.pause_image = "registry.k8s.io/pause@" + k_digest;
    warm::Rendered r;
    r.timeout_seconds = 600;
    r.notes = {"first note", "second note"};
    r.docs = {templates::k8s::Object{{"kind", "DaemonSet"}, {"apiVersion", "apps/v1"}}};
    CHECK(warm::manifests_header(in, r, "daemonset", "50MB/s") ==
          "paddle-image warm manifests --kind daemonset\n"
          "images (pinned by digest):\n"
          "  r.example.com/a@" +
              k_digest +
              "\n"
              "pause image (pinned by digest): registry.k8s.io/pause@" +
              k_digest +
              "\n"
              "pull timeout for the largest image: 600 s (max(600, 3 x size / 50MB/s))\n"
              "note: first note\n"
              "note: second note\n");
    // No pause image line without one (ImagePullJob, ImageCache).
    in.pause_image.clear();
    r.notes.clear();
    CHECK(warm::manifests_header(in, r, "imagecache", "1GB/s") ==
          "paddle-image warm manifests --kind imagecache\nimages (pinned by digest):\n  r.example.com/a@" + k_digest +
              "\npull timeout for the largest image: 600 s (max(600, 3 x size / 1GB/s))\n");

    json j = warm::to_json(in, r, "imagecache", "out.yaml");
    CHECK(j == json({{"kind", "imagecache"},
                     {"images",
                      {{{"image", "r.example.com/a:1"}, {"pinned", "r.example.com/a@" + k_digest}, {"bytes", 1234}}}},
                     {"pause_image", ""},
                     {"timeout_seconds", 600},
                     {"notes", json::array()},
                     {"documents", {{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}}}},
                     {"file", "out.yaml"}}));
  }
}

} // namespace unit_warm_commands_test
