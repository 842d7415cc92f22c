#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "spec/env_value.hpp"
#include "spec/sources_lock.hpp"
#include "spec/spec.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace unit_spec_test {

namespace fs = std::filesystem;
using test_support::contains;
using test_support::error_of;

namespace {

// A temporary project directory with a few sources next to spec.yaml.
struct Project {
  util::TempDir tmp{fs::temp_directory_path(), "pi-spec-test-"};
  fs::path spec_file;

  Project() {
    spec_file = tmp.path() / "spec.yaml";
    fs::create_directories(tmp.path() / "src" / "pkg");
    util::write_file_atomic(tmp.path() / "src" / "pkg" / "main.py", "print(1)\n");
    fs::create_directories(tmp.path() / "wheels");
    util::write_file_atomic(tmp.path() / "requirements.lock", "");
    util::write_file_atomic(tmp.path() / "model.bin", "weights");
  }

  spec::BuildSpec parse(const std::string& yaml) const { return spec::parse(yaml, spec_file); }

  util::Error error(const std::string& yaml) const {
    return error_of([&] { parse(yaml); });
  }

  // "<dir>/spec.yaml:LINE:COL"
  std::string at(int line, int col) const {
    return spec_file.string() + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

const char* k_full_spec = R"(image:
  name: example.com/team/app
  tags: [v1, latest]
  version: "1.2.3"
  source: https://example.com/repo
base: scratch
platform: linux/arm64
python:
  version: "3.11"
  interpreter: /usr/bin/python3.11
  site_packages: /usr/lib/python3/dist-packages
  scripts_dir: /usr/bin
  prefix: /usr
  glibc: "2.36"
requires:
  cuda: "12.0"
  cudnn: "8.9"
  paddle: "2.6.0"
  driver_min: "525.60"
  gpu_archs: [sm_80, sm_90]
compression:
  format: zstd
  level: 5
source_date_epoch: 1700000000
layers:
  - name: deps
    wheels:
      dir: wheels
      lock: requirements.lock
  - name: app
    files:
      - from: src
        to: /app/
        exclude: ["*.pyc", __pycache__]
        mode: "0644"
        dir_mode: "0750"
        owner: "1000:1001"
        allow_absolute_symlinks: true
    compression: gzip
    owner: {uid: 1, gid: 2, uname: a, gname: b}
  - name: models
    data:
      - from: model.bin
        to: /opt/models/model.bin
config:
  entrypoint: [python, -m, app]
  cmd: --help
  env:
    B: "2"
    A: "1"
  workdir: /app
  user: "1000"
  labels:
    team: ml
  ports: ["8080", 53/udp, 8080/tcp]
  stop_signal: SIGTERM
)";

// A minimal valid spec with one files layer; `item` is inserted as the copy item's extra lines.
std::string files_spec(const std::string& item_lines) {
  return "layers:\n"
         "  - name: app\n"
         "    files:\n"
         "      - from: src\n" +
         item_lines;
}

} // namespace

TEST_SUITE("spec") {

  TEST_CASE("layer kinds: one name each, read back by name; files and data ship copied files") {
    for (auto k : {spec::LayerSpec::Kind::wheels, spec::LayerSpec::Kind::files, spec::LayerSpec::Kind::data,
                   spec::LayerSpec::Kind::debs}) {
      CHECK(spec::kind_of_name(spec::kind_name(k)) == k);
    }
    CHECK(std::string(spec::kind_name(spec::LayerSpec::Kind::wheels)) == "wheels");
    CHECK_FALSE(spec::kind_of_name("base").has_value());
    CHECK(spec::ships_copied_files(spec::LayerSpec::Kind::files));
    CHECK(spec::ships_copied_files(spec::LayerSpec::Kind::data));
    CHECK_FALSE(spec::ships_copied_files(spec::LayerSpec::Kind::wheels));
    CHECK_FALSE(spec::ships_copied_files(spec::LayerSpec::Kind::debs));
  }

  TEST_CASE("debs layers: packages, repositories and the lock; every error names its field") {
    Project p;
    const std::string repo =
        "      repositories:\n        - url: http://deb.example/debian\n          suite: bookworm\n"
        "          keyring: keys/archive.gpg\n";
    auto s = p.parse("layers:\n  - name: system\n    debs:\n      packages: [libgl1, \"libgomp1=12.2.0-14\"]\n" + repo +
                     "      lock: debs.lock\n");
    REQUIRE(s.layers.size() == 1);
    const spec::DebsLayerSpec& d = s.layers[0].debs();
    CHECK(s.layers[0].kind == spec::LayerSpec::Kind::debs);
    CHECK(d.packages == std::vector<std::string>{"libgl1", "libgomp1=12.2.0-14"});
    REQUIRE(d.repositories.size() == 1);
    CHECK(d.repositories[0].components == std::vector<std::string>{"main"});
    CHECK(d.repositories[0].keyring == p.tmp.path() / "keys/archive.gpg"); // need not exist: lock reads it
    CHECK(d.lock_file == p.tmp.path() / "debs.lock");
    auto err = [&](const std::string& packages, const std::string& rest) {
      return std::string(
          p.error("layers:\n  - name: system\n    debs:\n      packages: " + packages + "\n" + rest).what());
    };
    CHECK(contains(err("[LibGL]", repo + "      lock: l\n"),
                   "layers[0].debs.packages[0]: 'LibGL' is not a Debian package name"));
    CHECK(contains(err("[libgl1]", repo), "missing 'lock'"));
    CHECK(contains(err("[libgl1]", "      lock: l\n"), "debs.repositories: must be a non-empty list"));
    CHECK(contains(err("[libgl1]", "      repositories:\n        - url: http://u:secret@deb.example/debian\n"
                                   "          suite: bookworm\n          keyring: k\n      lock: l\n"),
                   "the URL carries credentials"));
    CHECK(contains(err("[libgl1]", "      repositories:\n        - url: ftp://deb.example/debian\n"
                                   "          suite: bookworm\n          keyring: k\n      lock: l\n"),
                   "is not an http(s):// or file:// URL"));
    CHECK(contains(err("[libgl1]", "      repositories:\n        - url: http://deb.example/debian\n"
                                   "          suite: ../x\n          keyring: k\n      lock: l\n"),
                   "is not a suite name"));
    CHECK(contains(err("[libgl1]", repo + "      lock: l\n    owner: 1000\n"), "keep the owners their packages give"));
    std::string layer = "    debs:\n      packages: [libgl1]\n" + repo + "      lock: l\n";
    CHECK(contains(p.error("layers:\n  - name: a\n" + layer + "  - name: b\n" + layer).what(),
                   "a spec has one debs layer, and layer 'a' is one"));
  }

  TEST_CASE("remote sources: url with sha256, extraction fields, and the errors") {
    Project p;
    const std::string h(64, 'a');
    auto s = p.parse("layers:\n  - name: models\n    data:\n      - url: https://m.example/det.tar?sig=1\n"
                     "        sha256: sha256:" +
                     h +
                     "\n        size: 12\n        extract: true\n"
                     "        strip_components: 1\n        include: [\"*.pdmodel\"]\n        to: /opt/m\n");
    const spec::CopySpec& c = s.layers[0].copy().copies[0];
    REQUIRE(c.remote);
    CHECK(c.remote->url == "https://m.example/det.tar?sig=1");
    CHECK(c.remote->sha256 == h);
    CHECK(c.remote->size == 12);
    CHECK(c.remote->extract);
    CHECK(c.remote->strip_components == 1);
    CHECK(c.remote->include == std::vector<std::string>{"*.pdmodel"});
    CHECK(c.remote->filename == "det.tar");
    CHECK(c.from.empty());
    auto err = [&](const std::string& rule) {
      return std::string(p.error("layers:\n  - name: m\n    data:\n      - " + rule + "\n").what());
    };
    auto open = p.parse("layers:\n  - name: m\n    data:\n      - {url: https://h/x.tar, to: /x}\n");
    CHECK_FALSE(open.layers[0].copy().copies[0].remote->pinned());
    CHECK(open.sources_lock == p.tmp.path() / "spec.sources.lock");
    CHECK(spec::unpinned_sources(open).size() == 1);
    CHECK(contains(err("{url: https://h/x, ref: v1, to: /x}"), "'ref' belongs to a git source"));
    CHECK(contains(err("{url: https://h/x, sha256: abc, to: /x}"), "is not a SHA-256"));
    CHECK(contains(err("{url: \"https://u:pw@h/x\", sha256: " + h + ", to: /x}"), "carries credentials"));
    CHECK_FALSE(contains(err("{url: \"https://u:pw@h/x\", sha256: " + h + ", to: /x}"), "pw"));
    CHECK(contains(err("{url: file:///x, sha256: " + h + ", to: /x}"), "is not an http(s):// URL"));
    CHECK(contains(err("{url: https://h/x, sha256: " + h + ", to: /x, include: [a]}"),
                   "data[0].include: strip_components and include apply to an archive that is extracted"));
    CHECK(contains(err("{url: https://h/x, sha256: " + h + ", extract: true, strip_components: -1, to: /x}"),
                   "must be 0 to 64"));
    CHECK(
        contains(err("{from: a, url: https://h/x, sha256: " + h + ", to: /x}"), "takes one of 'from' (a path), 'url'"));
    const std::string commit(40, 'b');
    auto g = p.parse("layers:\n  - name: src\n    files:\n      - git: https://g.example/PaddleOCR.git\n"
                     "        commit: " +
                     commit + "\n        include: [ppocr]\n        to: /app/\n");
    const spec::CopySpec& gc = g.layers[0].copy().copies[0];
    REQUIRE(gc.remote);
    CHECK(gc.remote->is_git());
    CHECK(gc.remote->git_commit == commit);
    CHECK(gc.remote->url == "https://g.example/PaddleOCR.git");
    CHECK(contains(err("{git: https://g.example/r.git, to: /x}"), "a git source needs 'commit'"));
    CHECK(contains(err("{git: https://g.example/r.git, to: /x}"), "or 'ref' (a branch or tag)"));
    CHECK(contains(err("{git: https://g.example/r.git, commit: v1.2, to: /x}"), "is not a full commit"));
    CHECK(contains(err("{git: https://g.example/r.git, ref: \"a b\", to: /x}"), "is not a branch or tag name"));
    auto byref =
        p.parse("layers:\n  - name: src\n    files:\n      - {git: https://g.example/r.git, ref: v2.7, to: /a/}\n");
    CHECK(byref.layers[0].copy().copies[0].remote->is_git());
    CHECK_FALSE(byref.layers[0].copy().copies[0].remote->pinned());
    CHECK(contains(err("{git: https://g.example/r.git, commit: " + commit + ", sha256: " + h + ", to: /x}"),
                   "does not apply to a git source"));
    CHECK(contains(err("{git: \"https://u:pw@g.example/r.git\", commit: " + commit + ", to: /x}"),
                   "carries credentials"));
    CHECK(contains(err("{from: a, sha256: " + h + ", to: /x}"), "belongs to a download"));
  }

  TEST_CASE("a symlink rule: the link at to, and the keys it refuses") {
    Project p;
    auto s = p.parse("layers:\n  - name: links\n    files:\n      - {symlink: /opt/app/run.sh, to: /usr/local/bin/run, "
                     "owner: \"1000:1000\"}\n");
    const spec::CopySpec& c = s.layers[0].copy().copies[0];
    CHECK(c.symlink == std::optional<std::string>("/opt/app/run.sh"));
    CHECK(c.to == "/usr/local/bin/run");
    CHECK(c.from.empty());
    auto err = [&](const std::string& rule) {
      return std::string(p.error("layers:\n  - name: l\n    files:\n      - " + rule + "\n").what());
    };
    CHECK(contains(err("{symlink: x, to: /usr/bin/}"), "the link's own path, not a directory"));
    CHECK(contains(err("{symlink: x, to: /usr/bin/x, mode: \"0755\"}"), "'mode' does not apply to a symlink"));
    CHECK(contains(err("{symlink: x, from: a, to: /x}"), "takes one of 'from'"));
    CHECK(contains(err("{symlink: \"\", to: /x}"), "a link target is a non-empty path"));
    CHECK(contains(err("{symlink: x}"), "missing 'to'"));
  }

  TEST_CASE("a directory rule: the path, its mode and owner, and the keys it refuses") {
    Project p;
    auto s = p.parse("layers:\n  - name: dirs\n    files:\n      - {directory: /PaddleOCR/inference}\n"
                     "      - {directory: /data/cache, mode: \"0775\", owner: \"1000:1000\"}\n");
    const auto& cs = s.layers[0].copy().copies;
    REQUIRE(cs.size() == 2);
    CHECK(cs[0].directory);
    CHECK(cs[0].to == "/PaddleOCR/inference");
    CHECK(cs[0].from.empty());
    CHECK(!cs[0].dir_mode);
    CHECK(cs[1].dir_mode == std::optional<std::uint32_t>(0775));
    REQUIRE(cs[1].owner);
    CHECK(cs[1].owner->uid == 1000);
    auto err = [&](const std::string& rule) {
      return std::string(p.error("layers:\n  - name: l\n    files:\n      - " + rule + "\n").what());
    };
    CHECK(contains(err("{directory: data}"), "must be an absolute path inside the image"));
    CHECK(contains(err("{directory: /}"), "'/' is there in every image"));
    CHECK(contains(err("{directory: /x/../..}"), "escapes the image root"));
    CHECK(contains(err("{directory: /x, to: /y}"), "'to' does not apply to a directory rule"));
    CHECK(contains(err("{directory: /x, dir_mode: \"0700\"}"), "'dir_mode' does not apply to a directory rule"));
    CHECK(contains(err("{directory: /x, from: a}"), "takes one of 'from'"));
    CHECK(contains(err("{directory: /x, mode: \"9\"}"), "mode"));
  }

  TEST_CASE("the sources lock pins what the spec leaves open, and a malformed one is named") {
    Project p;
    const std::string h(64, 'c');
    const std::string commit(40, 'd');
    const std::string yaml = "layers:\n  - name: m\n    data:\n      - {url: https://h/x.tar, to: /x}\n"
                             "      - {url: https://h/y.tar, sha256: " +
                             std::string(64, 'e') +
                             ", to: /y}\n      - {git: https://g.example/r.git, ref: v2.7, to: /r/}\n";
    spec::SourcesLock lock;
    lock.downloads.push_back({"https://h/x.tar", h, 7});
    lock.downloads.push_back({"https://h/y.tar", std::string(64, 'f'), 1});
    lock.git.push_back({"https://g.example/r.git", "v2.7", commit});
    lock.git.push_back({"https://g.example/r.git", "main", std::string(40, 'a')});
    const std::string text = spec::sources_lock_text(lock);
    CHECK(text.find("\"lockVersion\": 1") != std::string::npos);
    CHECK(text.find("main") < text.find("v2.7")); // sorted by URL, then ref
    util::write_file_atomic(p.tmp.path() / "spec.sources.lock", text);
    auto s = p.parse(yaml);
    const auto& c = s.layers[0].copy().copies;
    CHECK(c[0].remote->sha256 == h);
    CHECK(c[0].remote->size == 7);
    CHECK(c[0].remote->pinned_by == "lock");
    CHECK(c[1].remote->sha256 == std::string(64, 'e')); // the spec's own pin wins
    CHECK(c[1].remote->pinned_by == "spec");
    CHECK(c[2].remote->git_commit == commit);
    CHECK(spec::unpinned_sources(s).empty());
    auto round = spec::read_sources_lock(p.tmp.path() / "spec.sources.lock");
    REQUIRE(round);
    CHECK(spec::sources_lock_text(*round) == text);
    util::write_file_atomic(
        p.tmp.path() / "spec.sources.lock",
        "{\"lockVersion\": 1, \"downloads\": [{\"url\": \"https://h/x.tar\", \"sha256\": \"nope\"}]}");
    std::string e = p.error(yaml).what();
    CHECK(contains(e, "spec.sources.lock: downloads[0].sha256 is not 64 lower-case hex digits"));
    util::write_file_atomic(p.tmp.path() / "spec.sources.lock", "{not json");
    CHECK(contains(p.error(yaml).what(), "spec.sources.lock: not JSON"));
  }

  TEST_CASE("image sources: a path in another image, pinned in the spec or by the sources lock") {
    Project p;
    const std::string d = "sha256:" + std::string(64, 'a');
    const std::string yaml = "layers:\n  - name: t\n    files:\n"
                             "      - {image: \"nvcr.io/nvidia/tritonserver:21.10-py3\", from: /opt/tritonserver/lib/, "
                             "to: /opt/lib}\n"
                             "      - {image: \"reg.example/x@" +
                             d +
                             "\", from: /bin/x, to: /x}\n"
                             "      - {image: \"oci:stage:v1\", from: /, to: /s/, digest: \"" +
                             d + "\"}\n";
    auto s = p.parse(yaml);
    const auto& c = s.layers[0].copy().copies;
    REQUIRE(c.size() == 3);
    CHECK(c[0].image->ref == "nvcr.io/nvidia/tritonserver:21.10-py3");
    CHECK(c[0].image->path == "/opt/tritonserver/lib");
    CHECK_FALSE(c[0].image->pinned());
    CHECK(c[1].image->ref == "reg.example/x");
    CHECK(c[1].image->digest == d);
    CHECK(c[1].image->pinned_by == "spec");
    CHECK(c[2].image->resolved == "oci:" + (p.tmp.path() / "stage").string() + ":v1");
    CHECK(c[2].image->path == "/");
    REQUIRE(spec::unpinned_sources(s).size() == 1);
    spec::SourcesLock lock;
    lock.images.push_back({"nvcr.io/nvidia/tritonserver:21.10-py3", "linux/amd64", "sha256:" + std::string(64, 'b')});
    lock.images.push_back({"nvcr.io/nvidia/tritonserver:21.10-py3", "linux/arm64", "sha256:" + std::string(64, 'c')});
    const std::string text = spec::sources_lock_text(lock);
    util::write_file_atomic(p.tmp.path() / "spec.sources.lock", text);
    auto locked = p.parse(yaml);
    CHECK(locked.layers[0].copy().copies[0].image->digest == "sha256:" + std::string(64, 'b')); // the spec's platform
    CHECK(locked.layers[0].copy().copies[0].image->pinned_by == "lock");
    CHECK(spec::unpinned_sources(locked).empty());
    CHECK(spec::sources_lock_text(*spec::read_sources_lock(p.tmp.path() / "spec.sources.lock")) == text);
    const std::string head = "layers:\n  - name: t\n    files:\n      - ";
    CHECK(contains(p.error(head + "{image: x:1, to: /x}\n").what(), "layers[0].files[0]: missing 'from'"));
    CHECK(contains(p.error(head + "{image: x:1, from: rel, to: /x}\n").what(), "layers[0].files[0].from"));
    CHECK(contains(p.error(head + "{image: x:1, from: /a, to: /x, digest: sha1:00}\n").what(),
                   "'sha1:00' is not sha256:HEX"));
    CHECK(contains(p.error(head + "{image: x:1, from: /a, to: /x, sha256: " + std::string(64, 'a') + "}\n").what(),
                   "'sha256' belongs to a download or a git source"));
    CHECK(contains(p.error(head + "{from: /a, to: /x, digest: \"" + d + "\"}\n").what(),
                   "'digest' belongs to an image source"));
    CHECK(contains(p.error(head + "{image: x:1, url: https://h/f, from: /a, to: /x}\n").what(),
                   "a copy rule takes one of"));
  }

  TEST_CASE("a full spec is parsed into its fields") {
    Project p;
    auto s = p.parse(k_full_spec);
    CHECK(s.file == p.spec_file);
    CHECK(s.dir == p.tmp.path());
    CHECK(s.name == "example.com/team/app");
    CHECK(s.tags == std::vector<std::string>{"v1", "latest"});
    CHECK(s.version == "1.2.3");
    CHECK(s.source == "https://example.com/repo");
    CHECK(s.base == "scratch");
    CHECK(s.platform == oci::Platform{"arm64", "linux", ""});
    REQUIRE(s.python.has_value());
    CHECK(s.python->version == "3.11");
    CHECK(s.python->interpreter == "/usr/bin/python3.11");
    CHECK(s.python->site_packages == "/usr/lib/python3/dist-packages");
    CHECK(s.python->scripts_dir == "/usr/bin");
    CHECK(s.python->prefix == "/usr");
    CHECK(s.python->glibc == std::pair{2, 36});
    CHECK(s.python->origin == p.at(9, 3));
    CHECK(s.requires_.cuda == "12.0");
    CHECK(s.requires_.cudnn == "8.9");
    CHECK(s.requires_.paddle == "2.6.0");
    CHECK(s.requires_.driver_min == "525.60");
    CHECK(s.requires_.gpu_archs == std::vector<std::string>{"sm_80", "sm_90"});
    CHECK(s.compression.format == oci::Compression::zstd);
    CHECK(s.compression.level == 5);
    REQUIRE(s.source_date_epoch.has_value());
    CHECK(*s.source_date_epoch == 1700000000);

    REQUIRE(s.layers.size() == 3);
    const auto& deps = s.layers[0];
    CHECK(deps.name == "deps");
    CHECK(deps.kind == spec::LayerSpec::Kind::wheels);
    REQUIRE(deps.as_wheels() != nullptr);
    CHECK(deps.as_copy() == nullptr);
    CHECK(deps.wheels().dir == p.tmp.path() / "wheels");
    REQUIRE(deps.wheels().lock_file.has_value());
    CHECK(*deps.wheels().lock_file == p.tmp.path() / "requirements.lock");
    CHECK_THROWS_AS(deps.copy(), std::logic_error);
    CHECK_FALSE(deps.compression.has_value());

    const auto& app = s.layers[1];
    CHECK(app.name == "app");
    CHECK(app.kind == spec::LayerSpec::Kind::files);
    REQUIRE(app.copy().copies.size() == 1);
    const auto& c = app.copy().copies[0];
    CHECK(c.from == p.tmp.path() / "src");
    CHECK(c.from.is_absolute());
    CHECK(c.to == "/app/");
    CHECK(c.exclude == std::vector<std::string>{"*.pyc", "__pycache__"});
    CHECK(c.mode == std::optional<std::uint32_t>(0644));
    CHECK(c.dir_mode == std::optional<std::uint32_t>(0750));
    REQUIRE(c.owner.has_value());
    CHECK(c.owner->uid == 1000);
    CHECK(c.owner->gid == 1001);
    CHECK(c.allow_absolute_symlinks);
    CHECK(c.origin == p.at(32, 9));
    REQUIRE(app.compression.has_value());
    CHECK(app.compression->format == oci::Compression::gzip);
    CHECK(app.compression->level == 6); // the format's default, resolved at parse
    REQUIRE(app.owner.has_value());
    CHECK(app.owner->uid == 1);
    CHECK(app.owner->gid == 2);
    CHECK(app.owner->uname == "a");
    CHECK(app.owner->gname == "b");

    const auto& models = s.layers[2];
    CHECK(models.kind == spec::LayerSpec::Kind::data);
    REQUIRE(models.copy().copies.size() == 1);
    CHECK(models.copy().copies[0].from == p.tmp.path() / "model.bin");
    CHECK(models.copy().copies[0].to == "/opt/models/model.bin");
    CHECK_FALSE(models.copy().copies[0].mode.has_value());
    CHECK_FALSE(models.copy().copies[0].owner.has_value());
    CHECK_FALSE(models.copy().copies[0].allow_absolute_symlinks);

    const auto& cfg = s.config;
    CHECK(cfg.entrypoint == std::optional<std::vector<std::string>>({"python", "-m", "app"}));
    CHECK(cfg.cmd == std::optional<std::vector<std::string>>({"--help"}));
    REQUIRE(cfg.env.size() == 2);
    CHECK(cfg.env[0] == std::pair<std::string, std::string>{"B", "2"}); // file order kept
    CHECK(cfg.env[1] == std::pair<std::string, std::string>{"A", "1"});
    CHECK(cfg.workdir == "/app");
    CHECK(cfg.user == "1000");
    CHECK(cfg.labels == std::map<std::string, std::string>{{"team", "ml"}});
    CHECK(cfg.ports == std::vector<std::string>{"53/udp", "8080/tcp"}); // sorted, deduplicated
    CHECK(cfg.stop_signal == "SIGTERM");
  }

  TEST_CASE("defaults of a minimal spec") {
    Project p;
    auto s = p.parse("layers: []\n");
    CHECK(s.base == "scratch");
    CHECK(s.platform == oci::default_platform());
    CHECK(s.compression.format == oci::Compression::gzip);
    CHECK(s.compression.level == 6); // gzip's default, resolved at parse
    CHECK_FALSE(s.python.has_value());
    CHECK_FALSE(s.source_date_epoch.has_value());
    CHECK(s.layers.empty());
    CHECK(s.tags.empty());
    CHECK_FALSE(s.config.entrypoint.has_value());
  }

  TEST_CASE("an oci: or docker-archive: base relative to the spec is resolved against the spec directory") {
    Project p;
    auto s = p.parse("base: oci:base-layout:v1\n");
    CHECK(s.base == "oci:base-layout:v1"); // as written
    CHECK(s.base_resolved == "oci:" + (p.tmp.path() / "base-layout").string() + ":v1");
    CHECK(s.base_origin == p.at(1, 7));
    auto abs = p.parse("base: oci:/srv/layouts/base:v2\n");
    CHECK(abs.base_resolved == "oci:/srv/layouts/base:v2");
    // A docker-archive base is a file, relative to the spec too.
    auto arch = p.parse("base: docker-archive:bases/paddle.tar\n");
    CHECK(arch.base_resolved == "docker-archive:" + (p.tmp.path() / "bases/paddle.tar").string());
    CHECK(p.parse("base: docker-archive:/x.tar\n").base_resolved == "docker-archive:/x.tar");
    auto bad = p.error("base: Not/A/Valid:ref!\n");
    CHECK(contains(bad.what(), p.at(1, 7) + ": base: "));
  }

  TEST_CASE("unknown top-level key gets a location and a suggestion") {
    Project p;
    auto e = p.error("image:\n  name: app\nlayres:\n  - name: x\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "spec.yaml:3:1"));
    CHECK(contains(e.what(), p.at(3, 1) + ": layres: unknown key 'layres'"));
    CHECK(contains(e.hint(), "did you mean 'layers'?"));
  }

  TEST_CASE("an alias to a mapping that holds it is refused, not followed forever") {
    Project p;
    // Found by fuzz_spec: the walk for repeated keys overflowed the stack.
    auto e = p.error("image:\n  name: app\n  labels: &l\n    x: *l\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "nests deeper than 64 levels"));
    CHECK(contains(e.hint(), "must not refer to a mapping or list that contains it"));
  }

  TEST_CASE("a key far from every known key lists the known keys") {
    Project p;
    auto e = p.error("zzzzzzzzzzzz: 1\n");
    CHECK(contains(e.what(), "unknown key 'zzzzzzzzzzzz'"));
    CHECK(contains(e.hint(), "known keys: image, base"));
    CHECK_FALSE(contains(e.hint(), "did you mean"));
  }

  TEST_CASE("misspelled nested key 'form'") {
    Project p;
    auto e = p.error("layers:\n"
                     "  - name: app\n"
                     "    files:\n"
                     "      - form: src\n"
                     "        to: /app/\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(4, 9) + ": layers[0].files[0].form: unknown key 'form'"));
    CHECK(contains(e.hint(), "did you mean 'from'?"));
  }

  TEST_CASE("misspelled keys in other sections") {
    Project p;
    CHECK(contains(p.error("config:\n  entrypiont: [x]\n").hint(), "did you mean 'entrypoint'?"));
    CHECK(contains(p.error("image:\n  tag: [x]\n").hint(), "did you mean 'tags'?"));
    CHECK(contains(p.error("python:\n  version: \"3.11\"\n  interpeter: /usr/bin/python3\n").what(),
                   "python.interpeter"));
  }

  TEST_CASE("wheels.uninstall: names only, in a layer that installs nothing else") {
    Project p;
    auto s = p.parse("layers:\n  - name: slim\n    wheels: {uninstall: [opencv-python, Pillow]}\n"
                     "  - name: one\n    wheels: {uninstall: six}\n");
    REQUIRE(s.layers.size() == 2);
    CHECK(s.layers[0].wheels().uninstall == std::vector<std::string>{"opencv-python", "Pillow"});
    CHECK(s.layers[0].wheels().uninstalls());
    CHECK_FALSE(s.layers[0].from_index()); // nothing for `lock` to resolve
    CHECK(s.layers[1].wheels().uninstall == std::vector<std::string>{"six"});
    CHECK(contains(s.layers[0].wheels().uninstall_origin, p.at(3, 25)));
    auto both = p.error("layers:\n  - name: x\n    wheels: {lock: r.lock, uninstall: [six]}\n");
    CHECK(contains(both.what(), "layers[0].wheels.lock: a layer that uninstalls installs nothing"));
    CHECK(contains(both.hint(), "a wheels layer of its own after this one"));
    auto versioned = p.error("layers:\n  - name: x\n    wheels: {uninstall: [six, \"pillow==10\"]}\n");
    CHECK(contains(versioned.what(), p.at(3, 31) + ": layers[0].wheels.uninstall: 'pillow==10' is not a project name"));
    CHECK(contains(p.error("layers:\n  - name: x\n    wheels: {uninstall: []}\n").what(),
                   "a project name or a list of them"));
  }

  TEST_CASE("accounts layers: groups and users with useradd's defaults; every error names its field") {
    Project p;
    auto s = p.parse("layers:\n  - name: users\n    accounts:\n      groups: [{name: ml, gid: 2000}]\n"
                     "      users:\n        - {name: paddle, uid: 1000, groups: [ml, video]}\n"
                     "        - {name: svc, uid: 999, gid: 2000, home: /srv/svc/, create_home: false, shell: "
                     "/usr/sbin/nologin, comment: Service, home_mode: \"0700\"}\n");
    REQUIRE(s.layers.size() == 1);
    CHECK(s.layers[0].kind == spec::LayerSpec::Kind::accounts);
    CHECK(std::string(spec::kind_name(s.layers[0].kind)) == "accounts");
    const auto& a = s.layers[0].accounts();
    REQUIRE(a.groups.size() == 1);
    CHECK(a.groups[0].gid == 2000);
    REQUIRE(a.users.size() == 2);
    CHECK(a.users[0].home == "/home/paddle");
    CHECK(a.users[0].shell == "/bin/sh");
    CHECK(a.users[0].create_home);
    CHECK(a.users[0].home_mode == 0755);
    CHECK_FALSE(a.users[0].gid.has_value());
    CHECK(a.users[0].groups == std::vector<std::string>{"ml", "video"});
    CHECK(contains(a.users[0].origin, p.at(6, 11)));
    CHECK(a.users[1].home == "/srv/svc");
    CHECK(a.users[1].gid == std::optional<std::int64_t>(2000));
    CHECK_FALSE(a.users[1].create_home);
    CHECK(a.users[1].home_mode == 0700);
    const std::string head = "layers:\n  - name: u\n    accounts:\n";
    CHECK(contains(p.error(head + "      users: [{name: x}]\n").what(), "layers[0].accounts.users[0]: missing 'uid'"));
    CHECK(contains(p.error(head + "      users: [{name: 9lives, uid: 5}]\n").what(),
                   "layers[0].accounts.users[0].name: '9lives' is not a user or group name"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: -1}]\n").what(), "-1 is not an id"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: 1, comment: \"a:b\"}]\n").what(),
                   "users[0].comment: holds ':' or a control character"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: 1, shell: bash}]\n").what(), "users[0].shell"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: 1}, {name: y, uid: 1}]\n").what(),
                   "layers[0].accounts.users[1].uid: uid 1 is also layers[0].accounts.users[0]'s"));
    CHECK(contains(p.error(head + "      groups: [{name: g, gid: 1}, {name: g, gid: 2}]\n").what(),
                   "layers[0].accounts.groups[1].name: 'g' is also layers[0].accounts.groups[0]"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: 1, groups: [a, a]}]\n").what(), "listed twice"));
    CHECK(contains(p.error(head + "      {}\n").what(), "names no group and no user"));
    CHECK(
        contains(p.error(head + "      users: [{name: x, uid: 1, shel: /bin/sh}]\n").hint(), "did you mean 'shell'?"));
    CHECK(contains(p.error(head + "      users: [{name: x, uid: 1}]\n    owner: \"1:1\"\n").what(),
                   "an accounts layer's home directories belong to their users"));
    auto two = p.error(head + "      users: [{name: x, uid: 1}]\n  - name: v\n    accounts:\n      users: [{name: y, "
                              "uid: 2}]\n");
    CHECK(contains(two.what(), "a spec has one accounts layer, and layer 'u' is one"));
  }

  TEST_CASE("missing source path names the field") {
    Project p;
    auto e = p.error(files_spec("        to: /app/\n"
                                "      - from: does-not-exist\n"
                                "        to: /x/\n"));
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(6, 15) + ": layers[0].files[1].from: source 'does-not-exist' does not exist"));
    CHECK(contains(e.what(), (p.tmp.path() / "does-not-exist").string()));
    CHECK(contains(e.hint(), "relative to the directory of the spec file"));

    SUBCASE("wheels dir") {
      auto w = p.error("layers:\n  - name: deps\n    wheels: nowheels\n");
      CHECK(contains(w.what(), "layers[0].wheels: source 'nowheels' does not exist"));
    }
    SUBCASE("wheels dir that is a file") {
      auto w = p.error("layers:\n  - name: deps\n    wheels: model.bin\n");
      CHECK(contains(w.what(), "layers[0].wheels:"));
      CHECK(contains(w.what(), "is not a directory"));
    }
    SUBCASE("lock file") {
      auto w = p.error("layers:\n  - name: deps\n    wheels:\n      dir: wheels\n      lock: nolock.txt\n");
      CHECK(contains(w.what(), "layers[0].wheels.lock: source 'nolock.txt' does not exist"));
    }
  }

  TEST_CASE("to: paths must be absolute and stay inside the image") {
    Project p;
    SUBCASE("escaping with ..") {
      auto e = p.error(files_spec("        to: /../etc\n"));
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), p.at(5, 13) + ": layers[0].files[0].to: '/../etc' escapes the image root"));
    }
    SUBCASE("escaping deeper") {
      auto e = p.error(files_spec("        to: /app/../../etc/\n"));
      CHECK(contains(e.what(), "escapes the image root"));
    }
    SUBCASE(".. that stays inside is fine") {
      auto s = p.parse(files_spec("        to: /app/../srv/\n"));
      CHECK(s.layers[0].copy().copies[0].to == "/app/../srv/");
    }
    SUBCASE("relative") {
      auto e = p.error(files_spec("        to: app/\n"));
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "layers[0].files[0].to: 'app/' must be an absolute path inside the image"));
    }
    SUBCASE("missing") {
      auto e = p.error(files_spec(""));
      CHECK(contains(e.what(), "layers[0].files[0]: missing 'to'"));
    }
    SUBCASE("workdir") {
      auto e = p.error("config:\n  workdir: app\n");
      CHECK(contains(e.what(), p.at(2, 12) + ": config.workdir: 'app' must be an absolute path"));
    }
  }

  TEST_CASE("bad modes") {
    Project p;
    for (const std::string m : {"\"0999\"", "rwx", "\"\"", "\"123456\""}) {
      CAPTURE(m);
      auto e = p.error(files_spec("        to: /app/\n        mode: " + m + "\n"));
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), p.at(6, 15) + ": layers[0].files[0].mode: "));
      CHECK(contains(e.what(), "is not an octal mode"));
    }
    auto big = p.error(files_spec("        to: /app/\n        dir_mode: \"77777\"\n"));
    CHECK(contains(big.what(), "layers[0].files[0].dir_mode: '77777' is not a file mode"));
    // Unquoted octal-looking modes are accepted as written.
    auto s = p.parse(files_spec("        to: /app/\n        mode: 0755\n"));
    CHECK(s.layers[0].copy().copies[0].mode == std::optional<std::uint32_t>(0755));
  }

  TEST_CASE("a layer compression without a format inherits the top-level format") {
    Project p;
    auto s = p.parse("compression: zstd\n" + files_spec("        to: /app/\n    compression: {level: 12}\n"));
    REQUIRE(s.layers[0].compression.has_value());
    CHECK(s.layers[0].compression->format == oci::Compression::zstd);
    CHECK(s.layers[0].compression->level == 12);
    // 12 is fine for zstd but out of range for gzip, the default format.
    auto e = p.error(files_spec("        to: /app/\n    compression: {level: 12}\n"));
    CHECK(contains(e.what(), "layers[0].compression.level: level 12 is out of range"));
  }

  TEST_CASE("compression: gpu-node is zstd at the GPU-node level, for the image or one layer") {
    Project p;
    auto s = p.parse("compression: gpu-node\n" + files_spec("        to: /app/\n"));
    CHECK(s.compression.format == oci::Compression::zstd);
    CHECK(s.compression.level == spec::k_gpu_node_zstd_level);
    auto one = p.parse(files_spec("        to: /app/\n    compression: gpu-node\n"));
    REQUIRE(one.layers[0].compression.has_value());
    CHECK(one.layers[0].compression->format == oci::Compression::zstd);
    CHECK(one.layers[0].compression->level == spec::k_gpu_node_zstd_level);
    // A misspelt name says what the names are, the preset included.
    auto e = p.error("compression: gpu_node\n" + files_spec("        to: /app/\n"));
    CHECK(contains(e.what(), "unknown compression 'gpu_node'"));
    CHECK(contains(e.hint(), "gpu-node"));
  }

  TEST_CASE("split: a size for every files and data layer, or one layer's own; none, 0 and errors") {
    Project p;
    auto s = p.parse("split: 128Mi\n" + files_spec("        to: /app/\n"));
    CHECK(s.split == (std::uint64_t{128} << 20));
    CHECK(s.layers[0].copy().split == (std::uint64_t{128} << 20));
    CHECK(p.parse(files_spec("        to: /app/\n")).layers[0].copy().split == 0);
    // A layer's own wins over the top level's, `none` included.
    CHECK(p.parse("split: 128Mi\n" + files_spec("        to: /app/\n    split: 64M\n")).layers[0].copy().split ==
          64000000);
    CHECK(p.parse("split: 128Mi\n" + files_spec("        to: /app/\n    split: none\n")).layers[0].copy().split == 0);
    CHECK(p.parse("split: 0\n" + files_spec("        to: /app/\n")).layers[0].copy().split == 0);
    auto bad = p.error("split: lots\n" + files_spec("        to: /app/\n"));
    CHECK(contains(bad.what(), "spec.yaml:1:8: split: 'lots' is not a size"));
    CHECK(contains(bad.hint(), "256Mi"));
    auto small = p.error(files_spec("        to: /app/\n    split: 100Ki\n"));
    CHECK(contains(small.what(), "layers[0].split: '100Ki' is below 1Mi"));
    // Wheels layers are never split: the top level's passes them by, their own is refused.
    auto wheels = p.parse("split: 128Mi\nlayers:\n  - name: deps\n    wheels: {dir: wheels}\n");
    CHECK(wheels.layers[0].as_copy() == nullptr); // no split to inherit
    auto refused = p.error("layers:\n  - name: deps\n    wheels: {dir: wheels}\n    split: 128Mi\n");
    CHECK(contains(refused.what(), "layers[0].split: a wheels layer is not split"));
  }

  TEST_CASE("allow_absolute_symlinks must be a boolean") {
    Project p;
    auto e = p.error(files_spec("        to: /app/\n        allow_absolute_symlinks: maybe\n"));
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(6, 34) + ": layers[0].files[0].allow_absolute_symlinks: must be true or false"));
    auto s = p.parse(files_spec("        to: /app/\n        allow_absolute_symlinks: false\n"));
    CHECK_FALSE(s.layers[0].copy().copies[0].allow_absolute_symlinks);
  }

  TEST_CASE("bad owners") {
    Project p;
    auto e = p.error(files_spec("        to: /app/\n        owner: root\n"));
    CHECK(contains(e.what(), "layers[0].files[0].owner: 'root' is not UID[:GID]"));
    CHECK(contains(p.error(files_spec("        to: /app/\n        owner: \"1000:abc\"\n")).what(),
                   "'1000:abc' is not UID[:GID]"));
    CHECK(contains(p.error(files_spec("        to: /app/\n        owner: \"12abc\"\n")).what(), "is not UID[:GID]"));
    auto neg = p.error(files_spec("        to: /app/\n        owner: {uid: -1}\n"));
    CHECK(contains(neg.what(), "must not be negative"));
    auto s = p.parse(files_spec("        to: /app/\n        owner: \"42\"\n"));
    CHECK(s.layers[0].copy().copies[0].owner->uid == 42);
    CHECK(s.layers[0].copy().copies[0].owner->gid == 42);
  }

  TEST_CASE("bad ports") {
    Project p;
    SUBCASE("out of range") {
      auto e = p.error("config:\n  ports: [\"8080\", \"70000\"]\n");
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "config.ports[1]: '70000' is not PORT[/tcp|udp|sctp]"));
      CHECK(contains(e.what(), "spec.yaml:2:"));
    }
    SUBCASE("unknown protocol") {
      auto e = p.error("config:\n  ports:\n    - 80/icmp\n");
      CHECK(contains(e.what(), p.at(3, 7) + ": config.ports[0]: '80/icmp'"));
    }
    SUBCASE("zero and non-numeric") {
      CHECK(contains(p.error("config:\n  ports: [\"0\"]\n").what(), "'0' is not PORT"));
      CHECK(contains(p.error("config:\n  ports: [http]\n").what(), "'http' is not PORT"));
    }
    SUBCASE("a single scalar port") {
      auto s = p.parse("config:\n  ports: 443\n");
      CHECK(s.config.ports == std::vector<std::string>{"443/tcp"});
    }
  }

  TEST_CASE("duplicate layer names") {
    Project p;
    auto e = p.error("layers:\n"
                     "  - name: app\n"
                     "    files: [{from: src, to: /a/}]\n"
                     "  - name: app\n"
                     "    data: [{from: model.bin, to: /b/}]\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(4, 11) + ": layers[1].name: layer name 'app' is used twice"));
  }

  TEST_CASE("layer shape errors") {
    Project p;
    CHECK(contains(p.error("layers:\n  - files: [{from: src, to: /a/}]\n").what(), "layers[0]: missing 'name'"));
    CHECK(contains(p.error("layers:\n  - name: x\n").what(),
                   "exactly one of 'wheels', 'files', 'data', 'debs' or 'accounts'"));
    CHECK(contains(
        p.error("layers:\n  - name: x\n    files: [{from: src, to: /a/}]\n    data: [{from: src, to: /b/}]\n").what(),
        "exactly one of"));
    CHECK(contains(p.error("layers:\n  - name: x\n    files: []\n").what(), "must be a non-empty list"));
    CHECK(contains(p.error("layers: {a: 1}\n").what(), "layers: must be a list of layers"));
  }

  TEST_CASE("invalid YAML reports the line") {
    Project p;
    auto e = p.error("image:\n  name: app\n  tags: [v1, v2\nbase: scratch\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(4, 5) + ": invalid YAML: "));
    CHECK(contains(e.hint(), "indentation"));

    auto bad_value = p.error("a: b\nc: d: e\n");
    CHECK(contains(bad_value.what(), p.at(2, 5) + ": invalid YAML: "));

    auto tab = p.error("image:\n  name: app\n\tbase: scratch\n");
    CHECK(contains(tab.what(), p.at(3, 1) + ": invalid YAML: "));
    CHECK(contains(tab.what(), "tab"));

    auto not_map = p.error("- just\n- a list\n");
    CHECK(contains(not_map.what(), p.spec_file.string() + ": the spec must be a YAML mapping"));
  }

  TEST_CASE("compression level out of range") {
    Project p;
    SUBCASE("gzip 10") {
      auto e = p.error("compression:\n  format: gzip\n  level: 10\n");
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), p.at(3, 10) + ": compression.level: level 10 is out of range"));
      CHECK(contains(e.hint(), "use 1-9"));
    }
    SUBCASE("zstd 20") {
      auto e = p.error("compression: {format: zstd, level: 20}\n");
      CHECK(contains(e.what(), "level 20 is out of range"));
      CHECK(contains(e.hint(), "use 1-19"));
    }
    SUBCASE("zstd 19 is fine") {
      CHECK(p.parse("compression: {format: zstd, level: 19}\n").compression.level == 19);
    }
    SUBCASE("none takes no level") {
      auto e = p.error("compression: {format: none, level: 1}\n");
      CHECK(contains(e.hint(), "'none' takes no level"));
    }
    SUBCASE("negative") {
      CHECK(contains(p.error("compression: {level: -1}\n").what(), "level -1 is out of range"));
    }
    SUBCASE("per-layer") {
      auto e = p.error(files_spec("        to: /app/\n    compression: {format: gzip, level: 0x1}\n"));
      CHECK(contains(e.what(), "layers[0].compression.level: '0x1' is not an integer"));
    }
    SUBCASE("unknown format") {
      auto e = p.error("compression: brotli\n");
      CHECK(contains(e.what(), "unknown compression 'brotli'"));
    }
  }

  TEST_CASE("other scalar validation") {
    Project p;
    CHECK(contains(p.error("platform: windows/amd64\n").what(), "unsupported platform 'windows/amd64'"));
    CHECK(contains(p.error("python:\n  version: \"2.7\"\n").what(), "'2.7' is not a Python 3 version"));
    CHECK(contains(p.error("python:\n  glibc: \"2.36\"\n").what(), "python: missing 'version'"));
    auto g = p.error("python:\n  version: \"3.11\"\n  glibc: \"2.x\"\n");
    CHECK(contains(g.what(), ":3:10")); // the spec's line and column, at parse time
    CHECK(contains(g.what(), "python.glibc"));
    CHECK(contains(g.what(), "'2.x' is not MAJOR.MINOR"));
    CHECK(contains(p.error("source_date_epoch: -5\n").what(), "source_date_epoch: must be between 0 and 253402300799"));
    CHECK(contains(p.error("source_date_epoch: 253402300800\n").what(),
                   "source_date_epoch: must be between 0 and 253402300799"));
    CHECK(p.parse("source_date_epoch: 253402300799\n").source_date_epoch == 253402300799);
    CHECK(contains(p.error("source_date_epoch: soon\n").what(), "'soon' is not an integer"));
    CHECK(contains(p.error("image:\n  tags: [\"-bad\"]\n").what(), "image.tags[0]: '-bad' is not a valid tag"));
    CHECK(contains(p.error("config:\n  env: [A=1]\n").what(), "config.env: must be a mapping"));
    CHECK(contains(p.error("config:\n  labels:\n    k: [1, 2]\n").what(), "config.labels.k: must be a string"));
  }

  TEST_CASE("duplicate keys are refused with both positions") {
    Project p;
    auto e = p.error("layers:\n  - name: a\n    files:\n      - from: src\n        to: /a/\n"
                     "layers:\n  - name: b\n    files:\n      - from: src\n        to: /b/\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(6, 1) + ": layers: key 'layers' appears twice (first at " + p.at(1, 1) + ")"));
    auto nested = p.error("config:\n  env:\n    A: \"1\"\n    A: \"2\"\n");
    CHECK(contains(nested.what(), p.at(4, 5) + ": config.env.A: key 'A' appears twice (first at " + p.at(3, 5)));
    auto in_list = p.error(files_spec("        to: /app/\n        to: /srv/\n"));
    CHECK(contains(in_list.what(), "layers[0].files[0].to: key 'to' appears twice"));
  }

  TEST_CASE("control characters, ids out of range and bad requires are refused") {
    Project p;
    auto nul = p.error(files_spec("        to: \"/app/\\0x\"\n"));
    CHECK(contains(nul.what(), "layers[0].files[0].to: '/app/\\x00x' holds a control character"));
    auto newline = p.error(files_spec("        to: \"/app/a\\nb\"\n"));
    CHECK(contains(newline.what(), "'/app/a\\x0ab' holds a control character"));
    auto big = p.error(files_spec("        to: /app/\n        owner: \"4294967296:0\"\n"));
    CHECK(contains(big.what(), "layers[0].files[0].owner: uid and gid must be at most 4294967294"));
    auto big_gid = p.error(files_spec("        to: /app/\n        owner: {uid: 1, gid: 4294967295}\n"));
    CHECK(contains(big_gid.what(), "uid and gid must be at most 4294967294"));
    CHECK(p.parse(files_spec("        to: /app/\n        owner: \"4294967294:0\"\n"))
              .layers[0]
              .copy()
              .copies[0]
              .owner->uid == 4294967294);
    CHECK(contains(p.error("requires:\n  cuda: banana\n").what(),
                   p.at(2, 9) + ": requires.cuda: 'banana' is not a CUDA version"));
    CHECK(contains(p.error("requires:\n  driver_min: x.y\n").what(), "requires.driver_min: 'x.y' is not a driver"));
    CHECK(contains(p.error("requires:\n  paddle: three\n").what(), "requires.paddle: 'three' is not a Paddle"));
    CHECK(contains(p.error("requires:\n  gpu_archs: [sm_80, ampere]\n").what(),
                   p.at(2, 22) + ": requires.gpu_archs[1]: 'ampere' is not a GPU architecture"));
    auto ok = p.parse("requires:\n  cuda: \"12.6\"\n  driver_min: \"535\"\n  paddle: 2.6.1.post117\n"
                      "  gpu_archs: [sm_80, \"90\", \"8.9\", sm_90a]\n");
    CHECK(ok.requires_.gpu_archs.size() == 4);
  }

  TEST_CASE("sources outside the spec's directory need allow_outside") {
    Project p;
    util::TempDir outside{fs::temp_directory_path(), "pi-spec-outside-"};
    util::write_file_atomic(outside.path() / "secret.txt", "x");
    std::string yaml = "layers:\n  - name: app\n    files:\n      - from: " + (outside.path() / "secret.txt").string() +
                       "\n        to: /app/\n";
    auto e = p.error(yaml);
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(4, 15) + ": layers[0].files[0].from: source"));
    CHECK(contains(e.what(), "lies outside the spec's directory"));
    CHECK(contains(e.hint(), "allow_outside: true"));
    // A relative path that climbs out, and a symlink inside that points out.
    auto up = p.error("layers:\n  - name: app\n    files:\n      - from: ../" + outside.path().filename().string() +
                      "\n        to: /app/\n");
    CHECK(contains(up.what(), "lies outside the spec's directory"));
    fs::create_symlink(outside.path(), p.tmp.path() / "link");
    auto via_link = p.error("layers:\n  - name: app\n    files:\n      - from: link/secret.txt\n        to: /app/\n");
    CHECK(contains(via_link.what(), "lies outside the spec's directory"));
    auto allowed = p.parse(yaml.substr(0, yaml.size()) + "        allow_outside: true\n");
    CHECK(allowed.layers[0].copy().copies[0].allow_outside);
    CHECK(allowed.layers[0].copy().copies[0].ignore == std::vector<std::string>{".git"});
    auto inside = p.parse("layers:\n  - name: app\n    files:\n      - from: src/pkg\n        to: /app/\n");
    CHECK(inside.layers[0].copy().copies[0].ignore_prefix == "src/pkg");
  }

  TEST_CASE("resolve.pre") {
    Project p;
    CHECK(p.parse("resolve:\n  pre: true\n").resolve->pre);
    CHECK_FALSE(p.parse("resolve:\n  paddle: \"3.0\"\n").resolve->pre);
    CHECK(contains(p.error("resolve:\n  pre: maybe\n").what(), "resolve.pre: must be true or false"));
  }

  TEST_CASE(
      "a wildcard from: a rule per match, as Docker's COPY matches; nothing matched or several into a file fail") {
    Project p;
    const fs::path d = p.tmp.path();
    for (const char* f : {"a.py", "b.py", ".hidden.py", "ignored.py", "sub/c.py", "configs/x.yml", "weird[1].txt",
                          "inference/inference.pdmodel", "inference/inference.pdiparams", "inference/other.bin"}) {
      fs::create_directories((d / f).parent_path());
      util::write_file_atomic(d / f, "x");
    }
    util::write_file_atomic(d / ".paddleimageignore", "ignored.py\n");
    auto froms = [&](const std::string& from, const std::string& to) {
      auto s = p.parse("layers:\n  - name: app\n    files:\n      - {from: \"" + from + "\", to: " + to + "}\n");
      std::vector<std::string> out;
      for (const auto& c : s.layers[0].copy().copies) {
        out.push_back(fs::relative(c.from, d).string());
        CHECK(c.to == to);
        CHECK(c.ignore_prefix == out.back()); // each match keeps .paddleimageignore for what is under it
      }
      return out;
    };
    // '*' matches a leading '.' (Go's filepath.Match), never a '/'; an ignored file is not there.
    CHECK(froms("*.py", "/app/") == std::vector<std::string>{".hidden.py", "a.py", "b.py"});
    CHECK(froms("s?b/*.py", "/app/") == std::vector<std::string>{"sub/c.py"});
    CHECK(froms("./inference/inference.*", "/PaddleOCR/inference/") ==
          std::vector<std::string>{"inference/inference.pdiparams", "inference/inference.pdmodel"});
    CHECK(froms("conf[a-z]*", "/app/configs") == std::vector<std::string>{"configs"}); // a directory: its contents
    CHECK(froms("[a].py", "/app/one.py") == std::vector<std::string>{"a.py"});         // one match: a file, as named
    CHECK(froms("weird[1].txt", "/w") == std::vector<std::string>{"weird[1].txt"});    // the literal file wins
    auto none = p.error("layers:\n  - name: app\n    files:\n      - {from: \"*.txt.gz\", to: /app/}\n");
    CHECK(
        contains(none.what(), p.at(4, 16) + ": layers[0].files[0].from: '*.txt.gz' matches nothing in " + d.string()));
    CHECK(contains(none.hint(), "within one path component"));
    auto ign = p.error("layers:\n  - name: app\n    files:\n      - {from: \"ign*.py\", to: /app/}\n");
    CHECK(contains(ign.what(), "what .paddleimageignore names is not matched"));
    auto into = p.error("layers:\n  - name: app\n    files:\n      - {from: \"[ab].py\", to: /app/main.py}\n");
    CHECK(contains(into.what(), "layers[0].files[0].to: '[ab].py' matches 2 paths (a.py, b.py), so 'to' must be a "
                                "directory ending in '/'"));
    CHECK(contains(into.hint(), "to: /app/main.py/"));
  }

  TEST_CASE(".paddleimageignore is read from the spec's directory") {
    Project p;
    util::write_file_atomic(p.tmp.path() / ".paddleimageignore",
                            "# comment\n\n*.ckpt\n/data/raw/\n!keep.ckpt\n!.git\n");
    auto s = p.parse(files_spec("        to: /app/\n"));
    CHECK(s.ignore == std::vector<std::string>{".git", "*.ckpt", "/data/raw/", "!keep.ckpt", "!.git"});
    CHECK(s.layers[0].copy().copies[0].ignore == s.ignore);
    CHECK(s.layers[0].copy().copies[0].ignore_prefix == "src");
    util::write_file_atomic(p.tmp.path() / ".paddleimageignore", "ok\n../up\n");
    auto e = p.error(files_spec("        to: /app/\n"));
    CHECK(contains(e.what(), ".paddleimageignore:2: '../up' is not a usable pattern"));
  }

  TEST_CASE("spec::load") {
    Project p;
    auto e = error_of([&] { spec::load(p.tmp.path() / "missing.yaml"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "does not exist"));
    auto dir = error_of([&] { spec::load(p.tmp.path()); });
    CHECK(contains(dir.what(), "is a directory"));
    CHECK(contains(dir.hint(), (p.tmp.path() / "spec.yaml").string()));
    util::write_file_atomic(p.spec_file, "image:\n  name: app\n");
    CHECK(spec::load(p.spec_file).name == "app");
  }

  TEST_CASE("config.env values expand references as Docker's ENV does") {
    const std::map<std::string, std::string> base = {{"PATH", "/usr/bin:/bin"}, {"EMPTY", ""}};
    auto lookup = [&](const std::string& n) -> std::optional<std::string> {
      auto it = base.find(n);
      return it == base.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    auto ex = [&](const std::string& v, std::vector<std::string>* unset = nullptr) {
      return spec::EnvValue::parse(v).expand(lookup, unset);
    };
    CHECK(ex("/opt/x/bin:$PATH") == "/opt/x/bin:/usr/bin:/bin");
    CHECK(ex("/opt/x/bin:${PATH}:/y") == "/opt/x/bin:/usr/bin:/bin:/y");
    CHECK(ex("${EMPTY:-d}|${EMPTY-d}|${NOPE-d}|${NOPE:-$PATH}") == "d||d|/usr/bin:/bin");
    CHECK(ex("${EMPTY:+w}|${EMPTY+w}|${PATH:+:$PATH}|${NOPE+w}") == "|w|:/usr/bin:/bin|");
    CHECK(ex("$$PATH costs $5 and $ more, $") == "$PATH costs $5 and $ more, $");
    std::vector<std::string> unset;
    CHECK(ex("/a:$LD_LIBRARY_PATH:${LD_LIBRARY_PATH}:${OTHER:-x}", &unset) == "/a:::x");
    CHECK(unset == std::vector<std::string>{"LD_LIBRARY_PATH"});
    CHECK(spec::EnvValue::parse("$$x").has_references() == false);
    CHECK(spec::EnvValue::parse("${A:-$B}").references() == std::vector<std::string>{"A", "B"});
    CHECK(spec::EnvValue::parse("a$$b\"c").dockerfile_quoted() == "\"a\\$b\\\"c\"");
    CHECK(spec::env_literal("a$b$$") == "a$$b$$$$");
    CHECK(ex(spec::env_literal("a$b${c}")) == "a$b${c}");
    for (const char* bad : {"${", "${PATH", "${1X}", "${PATH#x}", "${PATH:-x", "${}"}) {
      CHECK_THROWS_AS(spec::EnvValue::parse(bad), std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(spec::EnvValue::parse("ok ${PATH%/bin}"),
                         doctest::Contains("'${PATH%...}' is not a supported form"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(spec::EnvValue::parse("ok ${PATH%/bin}"), doctest::Contains("at column 10"),
                         std::invalid_argument);
  }

  TEST_CASE("a config.env value with a bad reference names the file, line and field") {
    Project p;
    auto e = p.error("config:\n  env:\n    P: \"/x:${PATH\"\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), p.at(3, 8) + ": config.env.P: '${' has no closing '}' at column 4"));
    CHECK(contains(e.hint(), "$$"));
    CHECK(p.parse("config:\n  env:\n    P: /x:$PATH:$$\n").config.env.at(0).second == "/x:$PATH:$$");
  }

} // TEST_SUITE

} // namespace unit_spec_test
