#include "layers/oci_archive.hpp"
#include "layers/tar.hpp"
#include "oci/layout.hpp"
#include "oci/layout_image.hpp"
#include "support.hpp"
#include "util/sha256.hpp"
#include "warm/export.hpp"
#include "warm/have.hpp"
#include "warm/hosts.hpp"
#include "warm/manifests.hpp"
#include "warm/plan.hpp"
#include "warm/verify.hpp"

#include <doctest/doctest.h>
#include <fstream>
#include <map>

namespace unit_warm_test {

using test_support::contains;
using test_support::error_of;
namespace fs = std::filesystem;

namespace {

oci::Digest digest_of(const std::string& s) {
  return oci::Digest::sha256(util::sha256_hex(s));
}

// An OCI layout at dir holding one image (uncompressed layers, so diff_id == digest)
// under `tag`; returns its manifest digest.
oci::Digest make_image(const fs::path& dir, const std::string& tag, const std::vector<std::string>& layers) {
  auto lock = oci::OciLayout::lock_dir(dir);
  auto layout = oci::OciLayout::open_or_create(dir);
  oci::ImageConfig cfg;
  oci::Manifest m;
  for (const auto& l : layers) {
    oci::Descriptor d = layout.blobs().put_bytes(oci::media::k_layer_tar, l);
    m.layers.push_back(d);
    cfg.diff_ids.push_back(d.digest);
  }
  m.config = layout.blobs().put_bytes(oci::media::k_config, oci::canonical(oci::to_json(cfg)));
  oci::Descriptor md = layout.blobs().put_bytes(oci::media::k_manifest, oci::canonical(oci::to_json(m)));
  layout.add_manifest(md, {tag});
  return md.digest;
}

std::string have_text(const std::vector<oci::Digest>& ds) {
  std::string s;
  for (const auto& d : ds) {
    s += d.str() + "\n";
  }
  return s;
}

} // namespace

TEST_SUITE("warm") {
  TEST_CASE("--have: ctr content ls -q output, blank lines, comments and CRLF") {
    std::string a = digest_of("a").str(), b = digest_of("b").str();
    warm::HaveList h = warm::parse_have(a + "\r\n\n# a comment\n  " + b + "  \n", "node.txt");
    CHECK(h.digests.size() == 2);
    CHECK(h.has(a));
    CHECK(h.has(b));
    CHECK(h.lines == 4);
    CHECK(warm::parse_have("", "empty.txt").digests.empty());
  }

  TEST_CASE("--have: a garbage line is an input error naming FILE:LINE") {
    std::string a = digest_of("a").str();
    auto e = error_of([&] { warm::parse_have(a + "\n\nnot-a-digest\n", "node.txt"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "node.txt:3"));
    CHECK(contains(e.what(), "not-a-digest"));
    CHECK(contains(e.hint(), "ctr -n k8s.io content ls -q"));
    auto t = error_of([&] { warm::parse_have("DIGEST SIZE AGE LABELS\n" + a + " 3 B 1 day -\n", "x.txt"); });
    CHECK(contains(t.what(), "x.txt:1"));
    CHECK(contains(t.hint(), "content ls -q"));
    // Upper-case hex and a short digest are not digests either.
    CHECK(contains(error_of([&] { warm::parse_have("sha256:ABC\n", "u.txt"); }).what(), "u.txt:1"));
  }

  TEST_CASE("chain ids follow the OCI image spec") {
    oci::Digest a = digest_of("a"), b = digest_of("b"), c = digest_of("c");
    auto ids = warm::chain_ids({a, b, c});
    REQUIRE(ids.size() == 3);
    CHECK(ids[0] == a);
    oci::Digest ab = oci::Digest::sha256(util::sha256_hex(a.str() + " " + b.str()));
    CHECK(ids[1] == ab);
    CHECK(ids[2] == oci::Digest::sha256(util::sha256_hex(ab.str() + " " + c.str())));
    CHECK(warm::chain_ids({}).empty());
  }

  TEST_CASE("plan: against nothing, a --have list and an image the node has") {
    auto tmp = test_support::make_temp("warm-plan");
    fs::path dir = tmp.path() / "layout";
    make_image(dir, "1.3", {"base layer", "deps layer", "app 1.3"});
    make_image(dir, "1.4", {"base layer", "deps layer", "app 1.4"});
    make_image(dir, "other", {"another base", "deps layer", "app 1.4"});
    auto v13 = oci::open_layout_image(dir, "1.3", "oci:layout:1.3");
    auto v14 = oci::open_layout_image(dir, "1.4", "oci:layout:1.4");
    auto other = oci::open_layout_image(dir, "other", "oci:layout:other");
    oci::CopyOptions opt;

    warm::Plan fresh = warm::make_plan(*v14, opt, warm::empty_baseline());
    CHECK(fresh.layers.size() == 3);
    CHECK(fresh.layers_new == 3);
    CHECK(fresh.bytes_to_move == fresh.bytes_total);
    CHECK(fresh.layers[0].chain_id == fresh.layers[0].diff_id);
    CHECK_FALSE(fresh.layers[0].snapshot_shared.has_value());

    warm::Plan p = warm::make_plan(*v14, opt, warm::baseline_from_image(*v13, opt));
    CHECK(p.layers_new == 1);
    CHECK(p.layers[0].shared);
    CHECK(p.layers[1].shared);
    CHECK_FALSE(p.layers[2].shared);
    CHECK(*p.layers[1].snapshot_shared);
    CHECK_FALSE(p.config_shared);
    CHECK(p.bytes_to_move == p.manifest.size + p.config.size + std::string("app 1.4").size());

    // The deps blob is shared, but its chain is not: the node unpacks it again.
    warm::Plan q = warm::make_plan(*v14, opt, warm::baseline_from_image(*other, opt));
    CHECK(q.layers[1].shared);
    CHECK_FALSE(*q.layers[1].snapshot_shared);
    CHECK(q.layers[2].shared);

    warm::HaveList have = warm::parse_have(have_text({p.layers[0].digest}), "have.txt");
    warm::Plan h = warm::make_plan(*v14, opt, warm::baseline_from_have(have));
    CHECK(h.layers_new == 2);
    CHECK(h.baseline == "--have have.txt");
    auto j = warm::to_json(h);
    CHECK(j["layers"][0]["status"] == "shared");
    CHECK(j["layers"][1]["status"] == "new");
    CHECK(j["bytes_to_move"] == h.bytes_to_move);
    CHECK(j["layers"][2]["chain_id"] == h.layers[2].chain_id.str());
  }

  TEST_CASE("oci-archive: names on the index, every blob hashed; thin leaves layers out") {
    auto tmp = test_support::make_temp("warm-archive");
    fs::path dir = tmp.path() / "layout";
    std::string base(40000, 'b'), deps(30000, 'd');
    oci::Digest top = make_image(dir, "1.4", {base, deps, "app 1.4"});
    auto img = oci::open_layout_image(dir, "1.4", "oci:layout:1.4");
    warm::ExportOptions eo;
    eo.repository = "registry.example.com/team/ocr";
    eo.tag = "1.4";
    eo.pin = true;
    warm::ExportResult r = warm::export_archive(*img, tmp.path() / "out" / "full.tar", eo);
    CHECK(r.names ==
          std::vector<std::string>{"registry.example.com/team/ocr:1.4", "registry.example.com/team/ocr@" + top.str()});
    CHECK(r.written.size() == 5); // config, three layers, manifest
    CHECK(r.omitted.empty());
    REQUIRE(r.commands.size() == 3);
    // containerd makes the by-digest name from the tag's entry (--digests, under the repository).
    CHECK(contains(r.commands[0], "ctr -n k8s.io images import --digests --base-name registry.example.com/team/ocr "
                                  "--platform linux/amd64 "));
    CHECK(r.commands[1] == "ctr -n k8s.io images label registry.example.com/team/ocr:1.4 "
                           "io.cri-containerd.pinned=pinned");

    std::map<std::string, std::string> members;
    layers::scan_tar(
        tmp.path() / "out" / "full.tar", [](const layers::TarMember& m) { return m.type == '0'; },
        [&](const layers::TarMember& m, const std::string& content) { members[m.path] = content; });
    CHECK(members.count("oci-layout") == 1);
    CHECK(members.count("blobs/sha256/" + top.hex) == 1);
    for (const auto& [path, content] : members) {
      if (path.rfind("blobs/sha256/", 0) == 0) {
        CHECK(util::sha256_hex(content) == path.substr(13));
      }
    }
    auto index = nlohmann::json::parse(members["index.json"]);
    // One entry for the one image: skopeo and podman load take an archive without a tag
    // only when index.json holds one.
    REQUIRE(index["manifests"].size() == 1);
    CHECK(index["manifests"][0]["annotations"]["io.containerd.image.name"] == "registry.example.com/team/ocr:1.4");
    CHECK(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == "1.4");
    CHECK(index["manifests"][0]["platform"]["os"] == "linux");

    // Thin: the layers the node has stay out; config and manifest never do.
    eo.have = warm::parse_have(have_text({digest_of(base), digest_of(deps), top}), "have.txt");
    warm::ExportResult t = warm::export_archive(*img, tmp.path() / "thin.tar", eo);
    CHECK(t.omitted.size() == 2);
    CHECK(t.written.size() == 3);
    CHECK(t.archive_bytes < r.archive_bytes);
  }

  TEST_CASE("oci-archive: a source blob that does not match its digest fails and leaves no file") {
    auto tmp = test_support::make_temp("warm-archive-bad");
    fs::path dir = tmp.path() / "layout";
    make_image(dir, "1", {"base layer", "tampered"});
    fs::path blob = dir / "blobs" / "sha256" / digest_of("tampered").hex;
    fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(blob, std::ios::binary) << "TAMPERED"; // same size, other bytes
    auto img = oci::open_layout_image(dir, "1", "oci:layout:1");
    layers::OciArchiveOptions ao;
    auto e = error_of([&] { layers::write_oci_archive(*img, tmp.path() / "x.tar", ao); });
    CHECK(e.kind() == util::ErrorKind::integrity);
    CHECK(contains(e.what(), digest_of("tampered").str()));
    CHECK_FALSE(fs::exists(tmp.path() / "x.tar"));
  }

  TEST_CASE("export: flags that go together") {
    warm::ExportOptions eo;
    eo.repository = "r.example.com/a";
    eo.tag = "1";
    CHECK(contains(error_of([&] { warm::check_export_options(eo, true); }).what(), "--thin needs --have"));
    eo.have = warm::HaveList{};
    eo.format = warm::ArchiveFormat::docker_archive;
    auto e = error_of([&] { warm::check_export_options(eo, true); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "oci-archive only"));
    eo.format = warm::ArchiveFormat::oci_archive;
    CHECK(contains(error_of([&] { warm::check_export_options(eo, false); }).what(), "--have goes with --thin"));
    eo.have.reset();
    eo.format = warm::ArchiveFormat::docker_archive;
    eo.tag.clear();
    CHECK(contains(error_of([&] { warm::check_export_options(eo, false); }).what(), "by tag"));
    CHECK(warm::parse_archive_format("docker-archive", "--format") == warm::ArchiveFormat::docker_archive);
    CHECK(contains(error_of([&] { warm::parse_archive_format("tar", "--format"); }).what(), "--format: 'tar'"));
    CHECK(warm::shell_quote("a/b.tar") == "a/b.tar");
    CHECK(warm::shell_quote("it's here.tar") == "'it'\\''s here.tar'");
    CHECK(warm::shell_quote("") == "''");
  }

  TEST_CASE("hosts.toml: mirrors in order, capabilities, TLS settings only when asked") {
    warm::HostsOptions o;
    o.upstream = "registry.example.com";
    o.mirrors = {"http://mirror.cluster.local:5000", "https://backup.example.com/cache"};
    warm::HostsFile f = warm::render_hosts(o);
    CHECK(f.host_dir == "registry.example.com");
    CHECK(f.server == "https://registry.example.com");
    CHECK(contains(f.text, "server = \"https://registry.example.com\"\n"));
    auto first = f.text.find("[host.\"http://mirror.cluster.local:5000\"]");
    auto second = f.text.find("[host.\"https://backup.example.com/cache\"]");
    CHECK(first != std::string::npos);
    CHECK(second != std::string::npos);
    CHECK(first < second);
    CHECK(contains(f.text, "capabilities = [\"pull\", \"resolve\"]"));
    CHECK_FALSE(contains(f.text, "skip_verify"));
    CHECK_FALSE(contains(f.text, "ca ="));

    o.capabilities = {"pull"};
    o.skip_verify = true;
    o.ca_file = "/tmp/certs/mirror-ca.crt";
    f = warm::render_hosts(o);
    CHECK(contains(f.text, "capabilities = [\"pull\"]\n"));
    // Only the https mirror gets TLS settings; the CA sits beside hosts.toml.
    CHECK(f.text.find("skip_verify = true") > second);
    CHECK(contains(f.text, "ca = \"mirror-ca.crt\""));
    CHECK(f.ca_name == "mirror-ca.crt");

    warm::HostsOptions hub;
    hub.upstream = "docker.io";
    hub.mirrors = {"mirror:5000"};
    warm::HostsFile h = warm::render_hosts(hub);
    CHECK(h.host_dir == "docker.io");
    CHECK(h.server == "https://registry-1.docker.io");
    CHECK(h.mirrors == std::vector<std::string>{"https://mirror:5000"});
    hub.upstream = "http://127.0.0.1:5000";
    CHECK(warm::render_hosts(hub).host_dir == "127.0.0.1:5000");
    CHECK(warm::render_hosts(hub).server == "http://127.0.0.1:5000");
    hub.upstream = "_default";
    CHECK_FALSE(contains(warm::render_hosts(hub).text, "server ="));
  }

  TEST_CASE("hosts.toml: bad flags are usage errors naming the flag") {
    warm::HostsOptions o;
    o.upstream = "registry.example.com";
    o.mirrors = {"http://m:5000"};
    o.capabilities = {"pul"};
    auto e = error_of([&] { warm::render_hosts(o); });
    CHECK(e.kind() == util::ErrorKind::usage);
    CHECK(contains(e.what(), "--capabilities: 'pul'"));
    CHECK(contains(e.hint(), "pull"));
    o.capabilities = {"resolve"};
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "without pull"));
    o.capabilities = {};
    o.skip_verify = true;
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "--skip-verify applies to https mirrors"));
    o.skip_verify = false;
    o.mirrors = {"ftp://m"};
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "--mirror 'ftp://m'"));
    o.mirrors = {"http://m\"x"};
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "not a registry URL"));
    o.mirrors = {"http://m", "http://m/"};
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "twice"));
    o.mirrors = {};
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "--mirror"));
    o.mirrors = {"http://m"};
    o.upstream = "registry.example.com/team";
    CHECK(contains(error_of([&] { warm::render_hosts(o); }).what(), "--upstream"));
    // Through util::parse_url, the one URL parser: credentials, a query, a fragment or a
    // bad port have no place in hosts.toml, and none is shown back.
    o.upstream = "registry.example.com";
    for (const char* bad : {"https://user:s3cret@m:5000", "http://m:5000/?x=1", "http://m:5000/#f", "http://m:50x0",
                            "http://[::1", "http://"}) {
      o.mirrors = {bad};
      INFO(bad);
      auto err = error_of([&] { warm::render_hosts(o); });
      CHECK(err.kind() == util::ErrorKind::usage);
      CHECK(contains(err.what(), "--mirror"));
      CHECK_FALSE(contains(err.what(), "s3cret"));
    }
    o.mirrors = {"HTTP://[::1]:5000/"};
    CHECK(warm::render_hosts(o).text.find("[::1]:5000") != std::string::npos);
  }

  TEST_CASE("hosts: written atomically under DIR/<host>/, the CA copied beside it") {
    auto tmp = test_support::make_temp("warm-hosts");
    util::write_file_atomic(tmp.path() / "ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    warm::HostsOptions o;
    o.upstream = "http://127.0.0.1:5000";
    o.mirrors = {"https://127.0.0.1:5001"};
    o.ca_file = tmp.path() / "ca.crt";
    auto w = warm::write_hosts(warm::render_hosts(o), o, tmp.path() / "certs.d");
    CHECK(w.hosts_toml == tmp.path() / "certs.d" / "127.0.0.1:5000" / "hosts.toml");
    CHECK(fs::exists(w.ca));
    CHECK(contains(util::read_file(w.hosts_toml), "ca = \"ca.crt\""));
    util::write_file_atomic(tmp.path() / "bad.crt", "not a certificate");
    o.ca_file = tmp.path() / "bad.crt";
    CHECK(error_of([&] { warm::write_hosts(warm::render_hosts(o), o, tmp.path() / "c2"); }).kind() ==
          util::ErrorKind::input);
  }

  TEST_CASE("config_path snippets for containerd config versions 2 and 3") {
    CHECK(warm::config_path_snippet("/etc/containerd/certs.d", 2) ==
          "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = "
          "\"/etc/containerd/certs.d\"\n");
    CHECK(contains(warm::config_path_snippet("/etc/containerd/certs.d", 3),
                   "[plugins.\"io.containerd.cri.v1.images\".registry]"));
  }

  TEST_CASE("verify --content-dir: every blob read and hashed; missing and corrupt ones named") {
    auto tmp = test_support::make_temp("warm-verify");
    fs::path dir = tmp.path() / "store";
    oci::Digest top = make_image(dir, "1", {"base layer", "deps layer", "app"});
    oci::CopyOptions opt;
    warm::VerifyReport ok = warm::verify_content_dir(dir, top, opt);
    CHECK(ok.passed());
    CHECK(ok.ok == 5);
    CHECK(ok.blobs[0].kind == "manifest");

    fs::remove(dir / "blobs" / "sha256" / digest_of("deps layer").hex);
    fs::path app = dir / "blobs" / "sha256" / digest_of("app").hex;
    fs::permissions(app, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(app, std::ios::binary) << "APP"; // right size, wrong bytes
    warm::VerifyReport bad = warm::verify_content_dir(dir, top, opt);
    CHECK_FALSE(bad.passed());
    CHECK(bad.missing == 1);
    CHECK(bad.corrupt == 1);
    CHECK(bad.failure_kind() == util::ErrorKind::integrity);
    auto j = warm::to_json(bad);
    bool named_missing = false, named_corrupt = false;
    for (const auto& b : j["blobs"]) {
      named_missing |= b["digest"] == digest_of("deps layer").str() && b["status"] == "missing";
      named_corrupt |= b["digest"] == digest_of("app").str() && b["status"] == "corrupt";
    }
    CHECK(named_missing);
    CHECK(named_corrupt);

    warm::VerifyReport none = warm::verify_content_dir(dir, digest_of("no such manifest"), opt);
    CHECK(none.missing == 1);
    CHECK(none.failure_kind() == util::ErrorKind::incomplete);
    CHECK(util::exit_code(none.failure_kind()) == 12);
    CHECK(error_of([&] { warm::verify_content_dir(tmp.path(), top, opt); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("manifests: pull deadlines scale with the size, bandwidths parse") {
    CHECK(warm::pull_timeout_seconds(1000, 50e6) == 600);
    CHECK(warm::pull_timeout_seconds(20'000'000'000, 50e6) == 1200);
    CHECK(warm::pull_timeout_seconds(20'000'000'001, 50e6) == 1201);
    CHECK(warm::parse_bandwidth("50MB/s", "--assume-bandwidth") == 50e6);
    CHECK(warm::parse_bandwidth("1.5G", "--assume-bandwidth") == 1.5e9);
    CHECK(warm::parse_bandwidth("100MiB/s", "--assume-bandwidth") == 100.0 * 1024 * 1024);
    for (const char* bad : {"fast", "0MB/s", "-5M", "50XB/s", ""}) {
      auto e = error_of([&] { warm::parse_bandwidth(bad, "--assume-bandwidth"); });
      CHECK(e.kind() == util::ErrorKind::usage);
      CHECK(contains(e.what(), "--assume-bandwidth"));
    }
    auto k = error_of([] { warm::parse_manifest_kind("daemonsets", "--kind"); });
    CHECK(contains(k.hint(), "did you mean 'daemonset'"));
  }

  TEST_CASE("manifests: a DaemonSet with an init container per image, pause, maxUnavailable 100%") {
    warm::ManifestsInput in;
    in.images = {
        {"r.example.com/team/ocr@sha256:" + std::string(64, 'a'), "r.example.com/team/ocr:1.4", 20'000'000'000},
        {"r.example.com/Team/My_Model@sha256:" + std::string(64, 'b'), "x", 1000}};
    in.pause_image = "registry.k8s.io/pause@sha256:" + std::string(64, 'c');
    in.node_selector = {{"nvidia.com/gpu.present", "true"}};
    in.tolerations = {templates::k8s::parse_toleration("nvidia.com/gpu:NoSchedule")};
    warm::Rendered r = warm::render_manifests(in);
    REQUIRE(r.docs.size() == 1);
    const auto& ds = r.docs[0];
    CHECK(ds["kind"] == "DaemonSet");
    CHECK(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "100%");
    const auto& spec = ds["spec"]["template"]["spec"];
    CHECK(spec["initContainers"].size() == 2);
    CHECK(spec["initContainers"][0]["name"] == "warm-0-ocr");
    CHECK(spec["initContainers"][1]["name"] == "warm-1-my-model");
    CHECK(spec["initContainers"][0]["command"] == templates::k8s::Object::array({"/bin/sh", "-c", "true"}));
    CHECK(spec["containers"][0]["image"] == in.pause_image);
    CHECK(spec["nodeSelector"]["nvidia.com/gpu.present"] == "true");
    CHECK(spec["tolerations"][0]["effect"] == "NoSchedule");
    CHECK(r.timeout_seconds == 1200);

    in.kind = warm::ManifestKind::imagepulljob;
    r = warm::render_manifests(in);
    REQUIRE(r.docs.size() == 2);
    CHECK(r.docs[0]["apiVersion"] == "apps.kruise.io/v1alpha1");
    CHECK(r.docs[0]["spec"]["pullPolicy"]["timeoutSeconds"] == 1200);
    CHECK(r.docs[1]["spec"]["pullPolicy"]["timeoutSeconds"] == 600);
    CHECK(r.docs[1]["metadata"]["name"] == "paddle-image-warm-1");
    CHECK(contains(r.notes[0], "no tolerations"));
    in.kruise_api = "v1beta1";
    CHECK(warm::render_manifests(in).docs[0]["apiVersion"] == "apps.kruise.io/v1beta1");
    in.kruise_api = "v2";
    CHECK(contains(error_of([&] { warm::render_manifests(in); }).what(), "--kruise-api"));

    in.kind = warm::ManifestKind::imagecache;
    in.kruise_api = "v1alpha1";
    r = warm::render_manifests(in);
    REQUIRE(r.docs.size() == 1);
    CHECK(r.docs[0]["spec"]["cacheSpec"][0]["images"].size() == 2);
    CHECK(contains(r.notes[0], "--image-pull-deadline-duration=1200s"));
    in.name = "Bad_Name";
    CHECK(contains(error_of([&] { warm::render_manifests(in); }).what(), "--name"));
  }
}

} // namespace unit_warm_test
