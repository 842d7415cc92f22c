#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "python/wheel.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace unit_wheel_test {

namespace fs = std::filesystem;
using python::WheelName;
using test_support::contains;
using test_support::error_of;

namespace {

util::TempDir make_temp() {
  return test_support::make_temp("pi-wheel-test-");
}

python::PythonTarget target(int minor = 11, std::optional<std::pair<int, int>> glibc = std::pair{2, 36},
                            std::string arch = "x86_64") {
  python::PythonTarget t;
  t.major = 3;
  t.minor = minor;
  t.arch = std::move(arch);
  t.glibc = glibc;
  t.interpreter = "/usr/bin/python3." + std::to_string(minor);
  t.site_packages = "/usr/local/lib/python3." + std::to_string(minor) + "/site-packages";
  t.scripts_dir = "/usr/local/bin";
  t.prefix = "/usr/local";
  return t;
}

std::optional<std::string> why(const std::string& filename, const python::PythonTarget& t) {
  return python::incompatibility(WheelName::parse(filename), t);
}

std::string record_hash(const std::string& content) {
  util::Sha256 h;
  h.update(content);
  auto raw = h.finish_raw();
  return "sha256=" + util::base64url_nopad(raw);
}

struct Member {
  std::string name;
  std::string content;
  unsigned perm = 0644;
};

// Writes a zip archive with libarchive's zip writer.
void write_zip(const fs::path& path, const std::vector<Member>& members) {
  struct archive* a = archive_write_new();
  REQUIRE(archive_write_set_format_zip(a) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const auto& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, m.perm);
    archive_entry_set_size(e, static_cast<la_int64_t>(m.content.size()));
    archive_entry_set_mtime(e, 315532800, 0);
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (!m.content.empty()) {
      REQUIRE(archive_write_data(a, m.content.data(), m.content.size()) == static_cast<la_ssize_t>(m.content.size()));
    }
    archive_entry_free(e);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

struct WheelOptions {
  std::map<std::string, std::string> record_override; // member -> hash field written to RECORD
  std::set<std::string> unlisted;                     // members left out of RECORD
  std::string wheel_file = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
};

// Builds a wheel: `members` plus dist-info WHEEL/METADATA and a RECORD listing them.
fs::path make_wheel(const fs::path& dir, const std::string& filename, const std::string& dist_info,
                    std::vector<Member> members, const WheelOptions& opts = {}) {
  members.push_back({dist_info + "/WHEEL", opts.wheel_file});
  members.push_back({dist_info + "/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n"});
  std::string record;
  for (const auto& m : members) {
    if (opts.unlisted.count(m.name) > 0) {
      continue;
    }
    auto it = opts.record_override.find(m.name);
    std::string hash = it != opts.record_override.end() ? it->second : record_hash(m.content);
    record += m.name + "," + hash + "," + std::to_string(m.content.size()) + "\n";
  }
  record += dist_info + "/RECORD,,\n";
  members.push_back({dist_info + "/RECORD", record});
  fs::path p = dir / filename;
  write_zip(p, members);
  return p;
}

struct RecordLine {
  std::string path;
  std::string hash;
  std::string size;
};

std::vector<RecordLine> read_record(const fs::path& p) {
  std::vector<RecordLine> out;
  std::istringstream in(util::read_file(p));
  std::string line;
  while (std::getline(in, line)) {
    auto c1 = line.find(',');
    auto c2 = line.find(',', c1 + 1);
    REQUIRE(c1 != std::string::npos);
    REQUIRE(c2 != std::string::npos);
    out.push_back({line.substr(0, c1), line.substr(c1 + 1, c2 - c1 - 1), line.substr(c2 + 1)});
  }
  return out;
}

unsigned perms_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

fs::path staged(const fs::path& root, const std::string& image_path) {
  return root / image_path.substr(1);
}

} // namespace

TEST_SUITE("wheel") {

  TEST_CASE("WheelName::parse") {
    SUBCASE("plain name") {
      auto w = WheelName::parse("requests-2.31.0-py3-none-any.whl");
      CHECK(w.distribution == "requests");
      CHECK(w.version == "2.31.0");
      CHECK(w.build.empty());
      CHECK(w.python_tags == std::vector<std::string>{"py3"});
      CHECK(w.abi_tags == std::vector<std::string>{"none"});
      CHECK(w.platform_tags == std::vector<std::string>{"any"});
    }
    SUBCASE("build tag and compressed tag sets") {
      auto w = WheelName::parse("my_pkg-1.0-1b-py2.py3-none-any.whl");
      CHECK(w.distribution == "my_pkg");
      CHECK(w.version == "1.0");
      CHECK(w.build == "1b");
      CHECK(w.python_tags == std::vector<std::string>{"py2", "py3"});
    }
    SUBCASE("several platform tags") {
      auto w = WheelName::parse("numpy-1.26.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
      CHECK(w.python_tags == std::vector<std::string>{"cp311"});
      CHECK(w.abi_tags == std::vector<std::string>{"cp311"});
      CHECK(w.platform_tags == std::vector<std::string>{"manylinux_2_17_x86_64", "manylinux2014_x86_64"});
    }
    SUBCASE("invalid names") {
      for (const std::string name : {"requests-2.31.0.tar.gz", ".whl", "whl", "foo-py3-none-any.whl",
                                     "a-b-c-d-e-f-g.whl", "requests-2.31.0-py3-none-any.zip"}) {
        CAPTURE(name);
        auto e = error_of([&] { WheelName::parse(name); });
        CHECK(e.kind() == util::ErrorKind::input);
        CHECK(contains(e.what(), name));
      }
    }
  }

  TEST_CASE("incompatibility()") {
    auto t311 = target(11, std::pair{2, 36});
    CHECK_FALSE(why("pkg-1.0-py3-none-any.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-py2.py3-none-any.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-cp311-cp311-manylinux2014_x86_64.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-cp311-cp311-linux_x86_64.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-cp38-abi3-manylinux_2_17_x86_64.whl", t311).has_value());
    CHECK_FALSE(why("pkg-1.0-py310-none-any.whl", t311).has_value());

    SUBCASE("wrong minor version") {
      auto w = why("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", target(10));
      REQUIRE(w.has_value());
      CHECK(contains(*w, "cp311"));
      CHECK(why("pkg-1.0-py312-none-any.whl", t311).has_value());
    }
    SUBCASE("glibc too old") {
      auto w = why("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", target(11, std::pair{2, 12}));
      REQUIRE(w.has_value());
      CHECK(contains(*w, "glibc"));
      CHECK(contains(*w, "2.17"));
      CHECK(contains(*w, "2.12"));
      // manylinux2010 needs exactly 2.12.
      CHECK_FALSE(why("pkg-1.0-cp311-cp311-manylinux2010_x86_64.whl", target(11, std::pair{2, 12})).has_value());
      // Unknown glibc: manylinux is not checked.
      CHECK_FALSE(why("pkg-1.0-cp311-cp311-manylinux_2_99_x86_64.whl", target(11, std::nullopt)).has_value());
    }
    SUBCASE("Python 2 ABI") {
      auto w = why("pkg-1.0-cp27-cp27mu-manylinux1_x86_64.whl", t311);
      REQUIRE(w.has_value());
      CHECK(contains(*w, "Python 2"));
    }
    SUBCASE("stable ABI newer than the target") {
      auto w = why("pkg-1.0-cp312-abi3-manylinux_2_17_x86_64.whl", t311);
      REQUIRE(w.has_value());
      CHECK(contains(*w, "3.12"));
    }
    SUBCASE("musllinux") {
      auto w = why("pkg-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", t311);
      REQUIRE(w.has_value());
      CHECK(contains(*w, "musllinux_1_1_x86_64"));
    }
    SUBCASE("other architecture") {
      auto w = why("pkg-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", t311);
      REQUIRE(w.has_value());
      CHECK(contains(*w, "aarch64"));
      CHECK_FALSE(why("pkg-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", target(11, std::pair{2, 36}, "aarch64")));
    }
    SUBCASE("non-CPython interpreter") {
      CHECK(why("pkg-1.0-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl", t311).has_value());
    }
    SUBCASE("describe") {
      CHECK(t311.describe() == "CPython 3.11 on linux x86_64 (glibc 2.36)");
      CHECK(target(10, std::nullopt).describe() == "CPython 3.10 on linux x86_64");
    }
  }

  TEST_CASE("normalize_project_name follows PEP 503") {
    CHECK(python::normalize_project_name("requests") == "requests");
    CHECK(python::normalize_project_name("Django") == "django");
    CHECK(python::normalize_project_name("zope.interface") == "zope-interface");
    CHECK(python::normalize_project_name("Foo.Bar_baz--Qux") == "foo-bar-baz-qux");
    CHECK(python::normalize_project_name("a__b") == "a-b");
    CHECK(python::normalize_project_name("PaddlePaddle_GPU") == "paddlepaddle-gpu");
  }

  TEST_CASE("install_wheel lays out a wheel like pip") {
    auto tmp = make_temp();
    auto t = target();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    const std::string di = "demo-1.0.dist-info";
    fs::path whl = make_wheel(
        tmp.path(), "demo-1.0-py3-none-any.whl", di,
        {
            {"demo/__init__.py", "VALUE = 1\n"},
            {"demo/cli.py",
             "def main():\n    return 0\n\nclass Tool:\n    @staticmethod\n    def run():\n        return 0\n"},
            {"demo/native.so", "ELF...", 0755},
            {"demo-1.0.data/purelib/demo_extra.py", "EXTRA = True\n"},
            {"demo-1.0.data/scripts/demo-tool", "#!python\nprint('hi')\n"},
            {"demo-1.0.data/scripts/demo-sh", "#!/bin/sh\necho hi\n"},
            {"demo-1.0.data/data/share/demo/readme.txt", "data file\n"},
            {"demo-1.0.data/headers/demo.h", "#define DEMO 1\n"},
            {di + "/entry_points.txt",
             "[console_scripts]\ndemo = demo.cli:main\ndemo-run = demo.cli:Tool.run [extra]\n\n[other]\nx = y:z\n"},
        });
    std::map<std::string, std::string> owners;
    auto info = python::install_wheel(whl, t, root, owners);

    CHECK(info.name == "demo");
    CHECK(info.version == "1.0");
    CHECK(info.filename == "demo-1.0-py3-none-any.whl");
    CHECK(info.sha256 == util::sha256_file_hex(whl));

    const std::string site = t.site_packages;
    CHECK(util::read_file(staged(root, site + "/demo/__init__.py")) == "VALUE = 1\n");
    CHECK(perms_of(staged(root, site + "/demo/__init__.py")) == 0644);
    CHECK(perms_of(staged(root, site + "/demo/native.so")) == 0755);
    // purelib goes to site-packages.
    CHECK(util::read_file(staged(root, site + "/demo_extra.py")) == "EXTRA = True\n");
    // scripts go to scripts_dir with "#!python" rewritten to the interpreter.
    CHECK(util::read_file(staged(root, "/usr/local/bin/demo-tool")) == "#!/usr/bin/python3.11\nprint('hi')\n");
    CHECK(perms_of(staged(root, "/usr/local/bin/demo-tool")) == 0755);
    CHECK(util::read_file(staged(root, "/usr/local/bin/demo-sh")) == "#!/bin/sh\necho hi\n");
    // data and headers go under the prefix.
    CHECK(util::read_file(staged(root, "/usr/local/share/demo/readme.txt")) == "data file\n");
    CHECK(util::read_file(staged(root, "/usr/local/include/python3.11/demo/demo.h")) == "#define DEMO 1\n");
    // The .data directory itself is not installed.
    CHECK_FALSE(fs::exists(staged(root, site + "/demo-1.0.data")));

    // Console-script launchers.
    std::string launcher = util::read_file(staged(root, "/usr/local/bin/demo"));
    CHECK(launcher.rfind("#!/usr/bin/python3.11\n", 0) == 0);
    CHECK(contains(launcher, "from demo.cli import main\n"));
    CHECK(contains(launcher, "sys.exit(main())"));
    CHECK(perms_of(staged(root, "/usr/local/bin/demo")) == 0755);
    std::string run = util::read_file(staged(root, "/usr/local/bin/demo-run"));
    CHECK(contains(run, "from demo.cli import Tool\n"));
    CHECK(contains(run, "sys.exit(Tool.run())"));
    CHECK_FALSE(fs::exists(staged(root, "/usr/local/bin/x"))); // not a script section

    // INSTALLER and a regenerated RECORD.
    CHECK(util::read_file(staged(root, site + "/" + di + "/INSTALLER")) == "paddle-image\n");
    CHECK(fs::exists(staged(root, site + "/" + di + "/WHEEL")));
    CHECK(fs::exists(staged(root, site + "/" + di + "/METADATA")));
    auto record = read_record(staged(root, site + "/" + di + "/RECORD"));
    std::set<std::string> paths;
    for (const auto& line : record) {
      CAPTURE(line.path);
      paths.insert(line.path);
      if (line.path == di + "/RECORD") {
        CHECK(line.hash.empty());
        CHECK(line.size.empty());
        continue;
      }
      fs::path file = (root / site.substr(1) / line.path).lexically_normal();
      REQUIRE(fs::is_regular_file(file));
      std::string content = util::read_file(file);
      CHECK(line.hash == record_hash(content));
      CHECK(line.size == std::to_string(content.size()));
    }
    for (const std::string& p : std::vector<std::string>{
             "demo/__init__.py", "demo/cli.py", "demo/native.so", "demo_extra.py", "../../../bin/demo-tool",
             "../../../bin/demo", "../../../bin/demo-run", "../../../share/demo/readme.txt", di + "/INSTALLER",
             di + "/WHEEL", di + "/RECORD", di + "/entry_points.txt"}) {
      CAPTURE(p);
      CHECK(paths.count(p) == 1);
    }
    CHECK(info.files == record.size());

    // owners records every installed image path.
    CHECK(owners.at(site + "/demo/__init__.py") == "demo-1.0-py3-none-any.whl");
    CHECK(owners.at("/usr/local/bin/demo") == "demo-1.0-py3-none-any.whl");
    CHECK(owners.count(site + "/" + di + "/RECORD") == 1);
  }

  TEST_CASE("install_wheel refuses unsafe member paths") {
    auto tmp = make_temp();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    fs::path whl = make_wheel(tmp.path(), "evil-1.0-py3-none-any.whl", "evil-1.0.dist-info",
                              {{"evil/__init__.py", ""}, {"../evil.py", "import os\n"}});
    std::map<std::string, std::string> owners;
    auto e = error_of([&] { python::install_wheel(whl, target(), root, owners); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "unsafe member path '../evil.py'"));
    // Nothing escaped the staging directory.
    std::vector<fs::path> found;
    for (const auto& entry : fs::recursive_directory_iterator(tmp.path())) {
      if (entry.path().filename() == "evil.py") {
        found.push_back(entry.path());
      }
    }
    CHECK(found.empty());

    SUBCASE("an absolute member path is refused too") {
      fs::path abs = make_wheel(tmp.path(), "abs-1.0-py3-none-any.whl", "abs-1.0.dist-info", {{"/etc/evil", "x"}});
      auto e2 = error_of([&] { python::install_wheel(abs, target(), root, owners); });
      CHECK(e2.kind() == util::ErrorKind::input);
      CHECK(contains(e2.what(), "unsafe member path"));
    }
  }

  TEST_CASE("normalize_version follows PEP 440 equality") {
    CHECK(python::normalize_version("1.0") == python::normalize_version("1.0.0"));
    CHECK(python::normalize_version("1.0") == python::normalize_version("v1.00.0"));
    CHECK(python::normalize_version("1.0-RC1") == python::normalize_version("1.0rc1"));
    CHECK(python::normalize_version("1.0.alpha.2") == python::normalize_version("1.0a2"));
    CHECK(python::normalize_version("1.0-1") == python::normalize_version("1.0.post1"));
    CHECK(python::normalize_version("2.6.1.post117") == "2.6.1.post117");
    CHECK(python::normalize_version("1.0") != python::normalize_version("1.0.1"));
    CHECK(python::normalize_version("1.0a1") != python::normalize_version("1.0b1"));
    CHECK(python::normalize_version("1.0+local_1") == python::normalize_version("1.0.0+local.1"));
  }

  TEST_CASE("install_wheel refuses a wheel whose file name disagrees with its .dist-info") {
    auto tmp = make_temp();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    std::map<std::string, std::string> owners;
    fs::path renamed = make_wheel(tmp.path(), "requests-2.0-py3-none-any.whl", "evil-2.0.dist-info",
                                  {{"evil/__init__.py", "x = 1\n"}});
    auto e = error_of([&] { python::install_wheel(renamed, target(), root, owners); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "names requests 2.0 but its evil-2.0.dist-info says evil 2.0"));
    fs::path version = make_wheel(tmp.path(), "pkg-2.0-py3-none-any.whl", "pkg-1.0.dist-info", {{"pkg/a.py", "\n"}});
    CHECK(contains(error_of([&] { python::install_wheel(version, target(), root, owners); }).what(), "says pkg 1.0"));
    // Equal after normalisation: PEP 503 names and PEP 440 versions.
    fs::path same =
        make_wheel(tmp.path(), "Foo_Bar-1.0-py3-none-any.whl", "foo.bar-1.0.0.dist-info", {{"foo_bar/a.py", "\n"}});
    CHECK_NOTHROW(python::install_wheel(same, target(), root, owners));
  }

  TEST_CASE("install_wheel installs format 1.x wheels only, as pip does (WHEEL's Wheel-Version)") {
    auto tmp = make_temp();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    std::map<std::string, std::string> owners;
    WheelOptions two;
    two.wheel_file = "Wheel-Version: 2.0\nRoot-Is-Purelib: true\n";
    fs::path w2 = make_wheel(tmp.path(), "pkg-1.0-py3-none-any.whl", "pkg-1.0.dist-info", {{"pkg/a.py", "\n"}}, two);
    auto e = error_of([&] { python::install_wheel(w2, target(), root, owners); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "is of format 2.0 (pkg-1.0.dist-info/WHEEL)"));
    owners.clear(); // each case installs the same files: a build stops at the first refusal
    WheelOptions none;
    none.wheel_file = "Generator: x\n";
    fs::path w0 = make_wheel(tmp.path(), "pkg-1.0-py3-none-any.whl", "pkg-1.0.dist-info", {{"pkg/a.py", "\n"}}, none);
    CHECK(contains(error_of([&] { python::install_wheel(w0, target(), root, owners); }).what(),
                   "pkg-1.0.dist-info/WHEEL is not valid: it has no Wheel-Version"));
    owners.clear();
    WheelOptions later;
    later.wheel_file = "Wheel-Version: 1.9\n";
    fs::path w1 = make_wheel(tmp.path(), "pkg-1.0-py3-none-any.whl", "pkg-1.0.dist-info", {{"pkg/a.py", "\n"}}, later);
    CHECK_NOTHROW(python::install_wheel(w1, target(), root, owners));
  }

  TEST_CASE("install_wheel refuses symlink members (exit 3, not an I/O error)") {
    auto tmp = make_temp();
    fs::path whl = tmp.path() / "link-1.0-py3-none-any.whl";
    {
      struct archive* a = archive_write_new();
      REQUIRE(archive_write_set_format_zip(a) == ARCHIVE_OK);
      REQUIRE(archive_write_open_filename(a, whl.c_str()) == ARCHIVE_OK);
      archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, "link/esc");
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, "/etc");
      archive_entry_set_perm(e, 0777);
      REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
      archive_entry_clear(e);
      archive_entry_set_pathname(e, "link/esc/passwd");
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      archive_entry_set_size(e, 2);
      REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
      REQUIRE(archive_write_data(a, "x\n", 2) == 2);
      archive_entry_free(e);
      REQUIRE(archive_write_close(a) == ARCHIVE_OK);
      archive_write_free(a);
    }
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    std::map<std::string, std::string> owners;
    auto err = error_of([&] { python::install_wheel(whl, target(), root, owners); });
    CHECK(err.kind() == util::ErrorKind::input);
    CHECK(contains(err.what(), "member 'link/esc' is a symbolic link, which is unsafe in a wheel"));
  }

  TEST_CASE("install_wheel checks members against the wheel's RECORD") {
    auto tmp = make_temp();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    std::map<std::string, std::string> owners;
    SUBCASE("content that does not match its RECORD hash") {
      WheelOptions opts;
      opts.record_override["tam/__init__.py"] = record_hash("original content\n");
      fs::path whl = make_wheel(tmp.path(), "tam-1.0-py3-none-any.whl", "tam-1.0.dist-info",
                                {{"tam/__init__.py", "tampered content\n"}}, opts);
      auto e = error_of([&] { python::install_wheel(whl, target(), root, owners); });
      CHECK(e.kind() == util::ErrorKind::integrity);
      CHECK(contains(e.what(), "tam/__init__.py"));
      CHECK(contains(e.what(), "does not match the hash in RECORD"));
    }
    SUBCASE("a member missing from RECORD") {
      WheelOptions opts;
      opts.unlisted.insert("tam/extra.py");
      fs::path whl = make_wheel(tmp.path(), "tam-1.0-py3-none-any.whl", "tam-1.0.dist-info",
                                {{"tam/__init__.py", ""}, {"tam/extra.py", "x = 1\n"}}, opts);
      auto e = error_of([&] { python::install_wheel(whl, target(), root, owners); });
      CHECK(e.kind() == util::ErrorKind::integrity);
      CHECK(contains(e.what(), "tam/extra.py is not listed in its RECORD"));
    }
    SUBCASE("no dist-info") {
      fs::path whl = tmp.path() / "bare-1.0-py3-none-any.whl";
      write_zip(whl, {{"bare/__init__.py", ""}});
      auto e = error_of([&] { python::install_wheel(whl, target(), root, owners); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "no .dist-info"));
    }
    SUBCASE("not a zip file") {
      fs::path whl = tmp.path() / "junk-1.0-py3-none-any.whl";
      util::write_file_atomic(whl, "this is not a zip archive at all");
      auto e = error_of([&] { python::install_wheel(whl, target(), root, owners); });
      CHECK(e.kind() == util::ErrorKind::input);
    }
  }

  TEST_CASE("install_wheel refuses two wheels writing the same file") {
    auto tmp = make_temp();
    fs::path root = tmp.path() / "staging";
    fs::create_directories(root);
    fs::path a = make_wheel(tmp.path(), "alpha-1.0-py3-none-any.whl", "alpha-1.0.dist-info",
                            {{"shared/util.py", "A\n"}, {"alpha/__init__.py", ""}});
    fs::path b = make_wheel(tmp.path(), "beta-2.0-py3-none-any.whl", "beta-2.0.dist-info",
                            {{"shared/util.py", "B\n"}, {"beta/__init__.py", ""}});
    std::map<std::string, std::string> owners;
    python::install_wheel(a, target(), root, owners);
    auto e = error_of([&] { python::install_wheel(b, target(), root, owners); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "alpha-1.0-py3-none-any.whl"));
    CHECK(contains(e.what(), "beta-2.0-py3-none-any.whl"));
    CHECK(contains(e.what(), "shared/util.py"));
    // The first wheel's file is untouched.
    CHECK(util::read_file(staged(root, target().site_packages + "/shared/util.py")) == "A\n");
  }

  TEST_CASE("install_wheel refuses a wheel that cannot run on the target") {
    auto tmp = make_temp();
    std::map<std::string, std::string> owners;
    fs::path whl = make_wheel(tmp.path(), "fast-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", "fast-1.0.dist-info",
                              {{"fast/__init__.py", ""}});
    auto e = error_of([&] { python::install_wheel(whl, target(), tmp.path() / "staging", owners); });
    CHECK(e.kind() == util::ErrorKind::incompatible);
    CHECK(contains(e.what(), "cannot run on the target"));
    CHECK(contains(e.hint(), "CPython 3.11"));
    CHECK(owners.empty());
  }

  TEST_CASE("wheel inventory: JSON round trip, in the form cache files and metadata hold") {
    python::WheelInventory inv;
    inv.wheels.push_back({"purepkg", "1.0", "purepkg-1.0-py3-none-any.whl", std::string(64, 'a'), 7});
    inv.wheels.push_back({"nspkg-a", "2.0rc1", "nspkg_a-2.0rc1-py3-none-any.whl", std::string(64, 'b'), 3});
    nlohmann::json j = python::to_json(inv);
    REQUIRE(j.is_array());
    CHECK(j.size() == 2);
    CHECK(j[0].dump() ==
          R"({"filename":"purepkg-1.0-py3-none-any.whl","files":7,"name":"purepkg",)"
          R"("sha256":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","version":"1.0"})");
    auto back = python::wheel_inventory_from_json(nlohmann::json::parse(j.dump()));
    REQUIRE(back.wheels.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(back.wheels[i].name == inv.wheels[i].name);
      CHECK(back.wheels[i].version == inv.wheels[i].version);
      CHECK(back.wheels[i].filename == inv.wheels[i].filename);
      CHECK(back.wheels[i].sha256 == inv.wheels[i].sha256);
      CHECK(back.wheels[i].files == inv.wheels[i].files);
    }
    CHECK(python::to_json(back) == j);
    CHECK(python::to_json(python::WheelInventory{}) == nlohmann::json::array());
    CHECK_THROWS_AS(python::wheel_inventory_from_json(nlohmann::json::object()), nlohmann::json::exception);
    CHECK_THROWS_AS(python::wheel_inventory_from_json(nlohmann::json::parse(R"([{"name":"x"}])")),
                    nlohmann::json::exception);
  }

} // TEST_SUITE

} // namespace unit_wheel_test
