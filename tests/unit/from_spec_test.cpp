#include <doctest/doctest.h>

#include "spec/spec.hpp"
#include "templates/from_spec.hpp"
#include "tests/unit/error_text.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <filesystem>
#include <string>

namespace unit_from_spec_test {

namespace fs = std::filesystem;

namespace {

// A spec's directory with the files its copies name.
struct SpecDir {
  util::TempDir tmp{fs::temp_directory_path(), "pi-from-spec-test-"};

  SpecDir() {
    fs::create_directories(tmp.path() / "src");
    util::write_file_atomic(tmp.path() / "src" / "train.py", "print(1)\n");
    fs::create_directories(tmp.path() / "wheels");
    util::write_file_atomic(tmp.path() / "model.bin", "weights");
    util::write_file_atomic(tmp.path() / "requirements.lock", "");
    util::write_file_atomic(tmp.path() / "other.lock", "");
    util::write_file_atomic(tmp.path() / "requirements.txt", "numpy\n");
  }

  spec::BuildSpec parse(const std::string& yaml) const { return spec::parse(yaml, tmp.path() / "spec.yaml"); }
};

// Runs in `dir` for its lifetime (the CI lock's path is relative to the working directory).
struct InDir {
  fs::path old = fs::current_path();
  explicit InDir(const fs::path& dir) { fs::current_path(dir); }
  ~InDir() { fs::current_path(old); }
  InDir(const InDir&) = delete;
  InDir& operator=(const InDir&) = delete;
};

const char* k_spec = R"(image: {name: registry.example.com/team/app}
base: scratch
python: {version: "3.11"}
layers:
  - name: deps
    wheels: {dir: wheels/}
  - name: models
    owner: "1000:100"
    data:
      - {from: model.bin, to: /opt/models/, mode: "0444"}
  - name: app
    files:
      - {from: src/, to: /app/, exclude: ["*.pyc"], dir_mode: "0750", owner: "7:8"}
config:
  entrypoint: [python3, /app/train.py]
  cmd: [--epochs, "3"]
  env: {B: "2", A: "1"}
  workdir: /app
  user: "1000"
  labels: {z: "1", a: "2"}
  ports: ["8080"]
  stop_signal: SIGINT
)";

// Two wheels layers from an index, each with a lock.
const char* k_index_spec = R"(image: {name: registry.example.com/team/app}
base: scratch
python: {version: "3.11"}
layers:
  - name: deps
    wheels: {lock: requirements.lock, index: https://mirror.example/simple}
  - name: extra
    wheels: {lock: other.lock, index: https://mirror.example/simple}
)";

} // namespace

TEST_CASE("dockerfile_input: the spec's layers and config as the Dockerfile's, paths as the context sees them") {
  SpecDir d;
  spec::BuildSpec s = d.parse(k_spec);
  templates::DockerfileInput in = templates::dockerfile_input(s, "given/spec.yaml");
  CHECK(in.spec_file == "given/spec.yaml");
  CHECK(in.base == "scratch");
  CHECK(in.platform == "linux/amd64");
  CHECK(in.python == "python3.11");
  CHECK_FALSE(in.custom_ignore);
  REQUIRE(in.layers.size() == 3);
  CHECK(in.layers[0].kind == "wheels");
  CHECK(in.layers[0].wheel_dir == "wheels/"); // a directory keeps its '/'
  CHECK(in.layers[0].lock.empty());
  CHECK(in.layers[1].kind == "data");
  CHECK(in.layers[1].chown == "1000:100");
  REQUIRE(in.layers[1].copies.size() == 1);
  CHECK(in.layers[1].copies[0].from == "model.bin");
  CHECK(in.layers[1].copies[0].to == "/opt/models/");
  CHECK(in.layers[1].copies[0].mode == 0444U);
  CHECK(in.layers[1].copies[0].chown.empty()); // the layer's owner is the layer's
  CHECK_FALSE(in.layers[1].copies[0].outside_context);
  const templates::DockerCopy& src = in.layers[2].copies.at(0);
  CHECK(in.layers[2].kind == "files");
  CHECK(in.layers[2].chown.empty());
  CHECK(src.from == "src/");
  CHECK(src.exclude == std::vector<std::string>{"*.pyc"});
  CHECK(src.dir_mode == 0750U);
  CHECK(src.chown == "7:8");
  CHECK(in.config.entrypoint == std::vector<std::string>{"python3", "/app/train.py"});
  CHECK(in.config.cmd == std::vector<std::string>{"--epochs", "3"});
  CHECK(in.config.env == std::vector<std::pair<std::string, std::string>>{{"B", "2"}, {"A", "1"}});
  CHECK(in.config.workdir == "/app");
  CHECK(in.config.user == "1000");
  CHECK(in.config.labels == std::vector<std::pair<std::string, std::string>>{{"a", "2"}, {"z", "1"}});
  CHECK(in.config.ports == s.config.ports);
  CHECK(in.config.stop_signal == "SIGINT");
}

TEST_CASE("dockerfile_input: an accounts layer as groupadd and useradd commands, every word quoted") {
  SpecDir d;
  spec::BuildSpec s = d.parse("base: scratch\nlayers:\n  - name: users\n    accounts:\n"
                              "      groups: [{name: ml, gid: 2000}]\n      users:\n"
                              "        - {name: paddle, uid: 1000, groups: [ml, video], shell: /bin/bash, comment: "
                              "\"Paddle's user\", home_mode: \"0750\"}\n"
                              "        - {name: svc, uid: 999, gid: 2000, create_home: false}\n");
  templates::DockerfileInput in = templates::dockerfile_input(s, "spec.yaml");
  REQUIRE(in.layers.size() == 1);
  CHECK(in.layers[0].kind == "accounts");
  CHECK(in.layers[0].accounts ==
        std::vector<std::string>{
            "groupadd -g 2000 ml", "{ getent group paddle >/dev/null || groupadd -g 1000 paddle; }",
            "useradd -l -u 1000 -g paddle -G ml,video -d /home/paddle -m -s /bin/bash -c 'Paddle'\\''s user' paddle",
            "chmod 0750 /home/paddle", "useradd -l -u 999 -g 2000 -d /home/svc -M -s /bin/sh svc"});
}

TEST_CASE("dockerfile_input: platform variant, named interpreter, .paddleimageignore, a lock, a path outside") {
  SpecDir d;
  util::write_file_atomic(d.tmp.path() / ".paddleimageignore", "*.tmp\n");
  spec::BuildSpec s = d.parse(k_index_spec);
  s.platform.architecture = "arm64";
  s.platform.variant = "v8";
  s.python->interpreter = "/usr/bin/python3.11";
  spec::CopySpec outside;
  outside.from = d.tmp.path().parent_path();
  outside.to = "/x/";
  spec::LayerSpec outer;
  outer.name = "outer";
  outer.kind = spec::LayerSpec::Kind::files;
  outer.body = spec::CopyLayerSpec{{outside}, 0};
  s.layers.push_back(outer);
  templates::DockerfileInput in = templates::dockerfile_input(s, "spec.yaml");
  CHECK(in.platform == "linux/arm64/v8");
  CHECK(in.python == "/usr/bin/python3.11");
  CHECK(in.custom_ignore);
  CHECK(in.layers[0].lock == "requirements.lock");
  CHECK(in.layers[0].wheel_dir.empty());
  CHECK(in.layers[0].indexes == s.layers[0].wheels().indexes);
  CHECK(in.layers[0].copies.empty());
  CHECK(in.layers.back().copies.at(0).from == "../");
  CHECK(in.layers.back().copies.at(0).outside_context);
  s.python.reset();
  CHECK(templates::dockerfile_input(s, "spec.yaml").python == "python3");
}

TEST_CASE("ci_input: the image from --image or image.name, a repository without tag or digest") {
  SpecDir d;
  spec::BuildSpec s = d.parse(k_spec);
  templates::CiRequest r;
  r.spec_file = "ci/spec.yaml";
  templates::CiInput in = templates::ci_input(s, r);
  CHECK(in.spec_file == "ci/spec.yaml");
  CHECK(in.image == "registry.example.com/team/app");
  CHECK(in.sign);
  CHECK(in.requirements.empty());
  CHECK(in.lock_file.empty());
  r.image = "registry.example.com/team/other";
  r.no_sign = true;
  r.tool.image = "registry.example.com/tools/pi@sha256:" + std::string(64, 'b');
  in = templates::ci_input(s, r);
  CHECK(in.image == "registry.example.com/team/other");
  CHECK_FALSE(in.sign);
  CHECK(in.tool.image == r.tool.image);
  const std::string fix = " | give a repository: --image REGISTRY/REPO (the pipeline tags it with the commit)";
  r.image = "registry.example.com/team/app:v1";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--image 'registry.example.com/team/app:v1' names a tag or digest" + fix);
  r.image = "reg.example.com/a b";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--image 'reg.example.com/a b' has white space or a control character" + fix);
  r.image = "oci:out";
  CHECK(error_of([&] { templates::ci_input(s, r); }) == "--image 'oci:out' is not a registry repository" + fix);
  r.image = "";
  s.name = "registry.example.com/team/app@sha256:" + std::string(64, 'c');
  CHECK(error_of([&] { templates::ci_input(s, r); }).find("image.name 'registry.example.com/team/app@sha256:") == 0);
  s.name = "";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "the spec names no image (image.name) to push | give --image REGISTRY/REPO");
}

TEST_CASE("ci_input: the lock check is for the one wheels layer from an index with a lock") {
  SpecDir d;
  InDir here(d.tmp.path());
  spec::BuildSpec s = d.parse(k_index_spec);
  templates::CiRequest r;
  r.requirements = "requirements.txt";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--requirements: the spec has several wheels layers from an index | name one with --layer");
  r.layer = "extra";
  templates::CiInput in = templates::ci_input(s, r);
  CHECK(in.requirements == "requirements.txt");
  CHECK(in.lock_layer == "extra");
  CHECK(in.lock_file == "other.lock"); // relative to the working directory
  r.layer = "nope";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--layer nope: no wheels layer of that name with a lock from an index | the lock check is for `wheels: "
        "{lock: FILE, index: URL}` layers (docs/wheels.md)");
  r.layer = "deps";
  r.requirements = "missing.txt";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--requirements missing.txt: no such file | name the requirements file the lock is made from (the CI job runs "
        "`paddle-image lock` on it)");
  r.requirements = "";
  CHECK(error_of([&] { templates::ci_input(s, r); }) ==
        "--layer goes with --requirements | name the requirements file the lock is made from");
  spec::BuildSpec plain = d.parse(k_spec); // its wheels come from a directory
  r.layer = "";
  r.requirements = "requirements.txt";
  CHECK(error_of([&] { templates::ci_input(plain, r); }) ==
        "--requirements: the spec has no wheels layer with a lock from an index | the lock check is for `wheels: "
        "{lock: FILE, index: URL}` layers (docs/wheels.md)");
}

} // namespace unit_from_spec_test
