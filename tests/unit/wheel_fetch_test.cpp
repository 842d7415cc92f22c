// Wheels from an index, without the network: METADATA headers, where a layer's
// wheels come from, which file select_wheel picks for a CPython 3.11 x86_64 glibc 2.36
// target (and why it refuses the others), and the dependency-closure check.
#include <doctest/doctest.h>

#include "python/requirement.hpp"
#include "python/wheel_fetch.hpp"
#include "tests/unit/support.hpp"
#include "util/error.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace unit_wheel_fetch_test {

using python::ClosureInput;
using python::IndexFile;
using python::TargetFacts;
using namespace test_support;

namespace {

const std::string k_a(64, 'a');
const std::string k_b(64, 'b');
const std::string k_c(64, 'c');

TargetFacts facts(std::map<std::string, std::string> base_dists = {}) {
  python::PythonTarget t;
  t.major = 3;
  t.minor = 11;
  t.arch = "x86_64";
  t.glibc = std::pair{2, 36};
  return python::target_facts(t, "3.11.2", std::move(base_dists));
}

python::RequirementLine lock_line(const std::string& text, std::vector<std::string> hashes = {}, int line = 7) {
  python::RequirementLine l;
  l.requirement = python::Requirement::parse(text);
  l.text = text;
  l.sha256 = std::move(hashes);
  l.file = "requirements.lock";
  l.line = line;
  return l;
}

IndexFile file(const std::string& name, const std::string& sha256 = {}) {
  IndexFile f;
  f.filename = name;
  f.url = "https://files.test/" + name;
  f.sha256 = sha256;
  f.page = "https://idx.test/simple/x/";
  return f;
}

ClosureInput input(const std::string& name, const std::string& version, std::vector<std::string> requires_dist,
                   std::set<std::string> extras = {}, int line = 1) {
  ClosureInput c;
  c.name = name;
  c.version = version;
  c.extras = std::move(extras);
  c.metadata.name = name;
  c.metadata.version = version;
  c.metadata.requires_dist = std::move(requires_dist);
  c.where = "requirements.lock:" + std::to_string(line);
  return c;
}

} // namespace

// ---- parse_metadata ----

TEST_CASE("parse_metadata reads the headers up to the first blank line, unfolding continued ones") {
  auto m = python::parse_metadata("Metadata-Version: 2.1\r\n"
                                  "Name: Foo-Bar\r\n"
                                  "Version: 1.2.3\r\n"
                                  "Summary: a summary that is\r\n"
                                  "        folded over two lines\r\n"
                                  "requires-python: >=3.8\r\n"
                                  "Requires-Dist: alpha (>=1.0)\r\n"
                                  "Requires-Dist: beta[fast] ; extra == \"speed\"\r\n"
                                  "Requires-Dist: gamma\r\n"
                                  "  >=2.0\r\n"
                                  "Provides-Extra: speed\r\n"
                                  "\r\n"
                                  "Requires-Dist: not-a-header\r\n"
                                  "Name: Not-The-Name\r\n"
                                  "The description.\r\n");
  CHECK(m.name == "Foo-Bar");
  CHECK(m.version == "1.2.3");
  REQUIRE(m.requires_python);
  CHECK(*m.requires_python == ">=3.8");
  REQUIRE(m.requires_dist.size() == 3);
  CHECK(m.requires_dist[0] == "alpha (>=1.0)");
  CHECK(m.requires_dist[1] == "beta[fast] ; extra == \"speed\"");
  auto folded = python::Requirement::parse(m.requires_dist[2]);
  CHECK(folded.key == "gamma");
  CHECK(folded.specifier.str() == ">=2.0");
}

TEST_CASE("parse_metadata of headers alone, and of nothing") {
  auto m = python::parse_metadata("Name: x\nVersion: 1\nRequires-Dist: y");
  CHECK(m.name == "x");
  CHECK(m.requires_dist == std::vector<std::string>{"y"});
  CHECK_FALSE(m.requires_python);
  auto empty = python::parse_metadata("");
  CHECK(empty.name.empty());
  CHECK(empty.requires_dist.empty());
}

// ---- layer_sources ----

TEST_CASE("layer_sources: the primary index is the spec's, else the lock's -i, else the environment's, else PyPI") {
  python::RequirementsFile lock;
  lock.index_url = "https://lock.test/simple";
  lock.extra_index_urls = {"https://lock-extra.test/simple"};
  python::IndexDefaults defaults;
  defaults.index_url = "https://env.test/simple";
  defaults.index_url_from = "PIP_INDEX_URL";
  defaults.extra_index_urls = {"https://env-extra.test/simple"};
  defaults.netrc = "/home/u/.netrc";

  SUBCASE("the spec's index wins; the environment's extras are not added") {
    auto s = python::layer_sources({"https://spec.test/simple"}, {}, lock, defaults);
    CHECK(s.sources.indexes == std::vector<std::string>{"https://spec.test/simple", "https://lock-extra.test/simple"});
    CHECK(contains(s.described, "spec"));
    CHECK(s.sources.netrc == "/home/u/.netrc");
  }
  SUBCASE("the lock's -i next, with both extras") {
    auto s = python::layer_sources({}, {}, lock, defaults);
    CHECK(s.sources.indexes == std::vector<std::string>{"https://lock.test/simple", "https://lock-extra.test/simple",
                                                        "https://env-extra.test/simple"});
    CHECK(contains(s.described, "--index-url"));
  }
  SUBCASE("the environment's index next") {
    python::RequirementsFile plain;
    auto s = python::layer_sources({}, {}, plain, defaults);
    CHECK(s.sources.indexes == std::vector<std::string>{"https://env.test/simple", "https://env-extra.test/simple"});
    CHECK(s.described == "PIP_INDEX_URL");
  }
  SUBCASE("PyPI when nothing is configured") {
    auto s = python::layer_sources({}, {}, python::RequirementsFile{}, python::IndexDefaults{});
    CHECK(s.sources.indexes == std::vector<std::string>{"https://pypi.org/simple"});
    CHECK(contains(s.described, "PyPI"));
    CHECK(s.sources.find_links.empty());
  }
  SUBCASE("--no-index: no index at all, find-links still") {
    python::RequirementsFile no_index = lock;
    no_index.no_index = true;
    no_index.find_links = {"/srv/wheels"};
    auto s = python::layer_sources({}, {}, no_index, defaults);
    CHECK(s.sources.indexes.empty());
    CHECK(s.sources.find_links == std::vector<std::string>{"/srv/wheels"});
    CHECK(contains(s.described, "--no-index"));
  }
}

TEST_CASE("layer_sources merges extra indexes and find-links without duplicates") {
  python::RequirementsFile lock;
  lock.index_url = "https://a.test/simple";
  lock.extra_index_urls = {"https://b.test/simple", "https://a.test/simple"};
  lock.find_links = {"https://links.test/x.html", "/srv/wheels"};
  python::IndexDefaults defaults;
  defaults.extra_index_urls = {"https://b.test/simple", "https://c.test/simple"};
  defaults.find_links = {"/srv/wheels", "/opt/wheels"};

  auto s = python::layer_sources({}, {}, lock, defaults);
  CHECK(s.sources.indexes ==
        std::vector<std::string>{"https://a.test/simple", "https://b.test/simple", "https://c.test/simple"});
  CHECK(s.sources.find_links == std::vector<std::string>{"https://links.test/x.html", "/srv/wheels", "/opt/wheels"});

  SUBCASE("the spec's find-links replace the environment's, the lock's still add up") {
    auto t = python::layer_sources({}, {"/spec/wheels", "/srv/wheels"}, lock, defaults);
    CHECK(t.sources.find_links == std::vector<std::string>{"/spec/wheels", "/srv/wheels", "https://links.test/x.html"});
  }
  SUBCASE("duplicate spec indexes collapse") {
    auto t = python::layer_sources({"https://s.test/simple", "https://s.test/simple", "https://b.test/simple"}, {},
                                   lock, defaults);
    CHECK(t.sources.indexes ==
          std::vector<std::string>{"https://s.test/simple", "https://b.test/simple", "https://a.test/simple"});
  }
}

// ---- select_wheel ----

TEST_CASE("select_wheel takes the best tag among the fitting wheels of the pinned version") {
  auto line = lock_line("pkg==1.0");
  std::vector<IndexFile> files = {
      file("pkg-1.0-py3-none-any.whl"),
      file("pkg-1.0-cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
      file("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
      file("pkg-1.0-cp311-cp311-manylinux_2_39_x86_64.whl"), // needs a newer glibc
      file("pkg-1.0-cp311-cp311-win_amd64.whl"),
      file("pkg-1.0-cp310-cp310-manylinux_2_17_x86_64.whl"),
      file("pkg-1.0-cp311-cp311-manylinux_2_17_aarch64.whl"),
      file("pkg-1.0.tar.gz"),
  };
  auto s = python::select_wheel(line, files, facts(), true);
  CHECK(s.file.filename == "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  CHECK(s.line == &line);
  CHECK(s.wheel.version == "1.0");
  CHECK(s.note.empty());

  SUBCASE("without the cp311 wheel, abi3; without that, the pure one") {
    files.erase(files.begin() + 2);
    CHECK(python::select_wheel(line, files, facts(), true).file.filename ==
          "pkg-1.0-cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
    files.erase(files.begin() + 1);
    CHECK(python::select_wheel(line, files, facts(), true).file.filename == "pkg-1.0-py3-none-any.whl");
  }
}

TEST_CASE("select_wheel takes the highest version the pin matches: a local version, never a post release") {
  std::vector<IndexFile> files = {
      file("torch-2.6.1-cp311-cp311-manylinux_2_17_x86_64.whl"),
      file("torch-2.6.1+cu118-cp311-cp311-manylinux_2_17_x86_64.whl"),
      file("torch-2.6.1.post118-cp311-cp311-manylinux_2_17_x86_64.whl"),
      file("torch-2.6.2-cp311-cp311-manylinux_2_17_x86_64.whl"),
  };
  auto pin = lock_line("torch==2.6.1");
  CHECK(python::select_wheel(pin, files, facts(), true).file.filename ==
        "torch-2.6.1+cu118-cp311-cp311-manylinux_2_17_x86_64.whl");
  auto post = lock_line("torch==2.6.1.post118");
  CHECK(python::select_wheel(post, files, facts(), true).file.filename ==
        "torch-2.6.1.post118-cp311-cp311-manylinux_2_17_x86_64.whl");
  auto local = lock_line("torch==2.6.1+cu118");
  CHECK(python::select_wheel(local, files, facts(), true).file.filename ==
        "torch-2.6.1+cu118-cp311-cp311-manylinux_2_17_x86_64.whl");

  SUBCASE("only the post release published: ==2.6.1 finds nothing") {
    std::vector<IndexFile> only_post = {file("torch-2.6.1.post118-cp311-cp311-manylinux_2_17_x86_64.whl")};
    auto e = error_of([&] { python::select_wheel(pin, only_post, facts(), true); });
    CHECK(e.kind() == util::ErrorKind::incompatible);
    CHECK(contains(e.what(), "2.6.1.post118"));
  }
}

TEST_CASE("select_wheel refuses a file whose advertised hash the lock does not list") {
  auto line = lock_line("pkg==1.0", {k_b});
  std::vector<IndexFile> files = {file("pkg-1.0-py3-none-any.whl", k_a)};
  auto e = error_of([&] { python::select_wheel(line, files, facts(), true); });
  CHECK(e.kind() == util::ErrorKind::incompatible);
  CHECK(contains(e.what(), "requirements.lock:7"));
  CHECK(contains(e.what(), "pkg-1.0-py3-none-any.whl"));
  CHECK(contains(e.what(), "not in the lock"));
  CHECK(contains(e.what(), k_a.substr(0, 12)));

  SUBCASE("the listed hash, or no advertised hash, passes") {
    files.push_back(file("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", k_b));
    CHECK(python::select_wheel(line, files, facts(), true).file.filename ==
          "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    CHECK(python::select_wheel(line, {file("pkg-1.0-py3-none-any.whl")}, facts(), true).file.filename ==
          "pkg-1.0-py3-none-any.whl");
  }
  SUBCASE("without check_hash (writing a lock) the hash does not matter") {
    CHECK(python::select_wheel(line, files, facts(), false).file.filename == "pkg-1.0-py3-none-any.whl");
  }
}

TEST_CASE("select_wheel skips a yanked file while an unyanked one fits, and takes it with a note otherwise") {
  auto line = lock_line("pkg==1.0");
  IndexFile yanked = file("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  yanked.yanked = "broken build";
  IndexFile pure = file("pkg-1.0-py3-none-any.whl");
  auto s = python::select_wheel(line, {yanked, pure}, facts(), true);
  CHECK(s.file.filename == "pkg-1.0-py3-none-any.whl");
  CHECK(s.note.empty());

  auto only = python::select_wheel(line, {yanked}, facts(), true);
  CHECK(only.file.filename == "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  CHECK(contains(only.note, "yanked"));
  CHECK(contains(only.note, "broken build"));
  CHECK(contains(only.note, "requirements.lock:7"));

  yanked.yanked = "";
  auto no_reason = python::select_wheel(line, {yanked}, facts(), true);
  CHECK(contains(no_reason.note, "yanked"));
  CHECK_FALSE(contains(no_reason.note, "()"));
}

TEST_CASE("select_wheel refuses a file whose Requires-Python excludes the target, saying why") {
  auto line = lock_line("pkg==1.0");
  IndexFile f = file("pkg-1.0-py3-none-any.whl");
  f.requires_python = ">=3.12";
  auto e = error_of([&] { python::select_wheel(line, {f}, facts(), true); });
  CHECK(e.kind() == util::ErrorKind::incompatible);
  CHECK(contains(e.what(), "pkg-1.0-py3-none-any.whl"));
  CHECK(contains(e.what(), "requires Python >=3.12"));
  CHECK(contains(e.what(), "3.11.2"));

  f.requires_python = ">=3.8, <4";
  CHECK(python::select_wheel(line, {f}, facts(), true).file.filename == "pkg-1.0-py3-none-any.whl");
  f.requires_python = "not a specifier";
  CHECK(python::select_wheel(line, {f}, facts(), true).file.filename == "pkg-1.0-py3-none-any.whl");
}

TEST_CASE("select_wheel refuses a version published only as a source distribution") {
  auto line = lock_line("pkg==1.0");
  auto e = error_of([&] { python::select_wheel(line, {file("pkg-1.0.tar.gz"), file("pkg-1.0.zip")}, facts(), true); });
  CHECK(e.kind() == util::ErrorKind::incompatible);
  CHECK(contains(e.what(), "source distribution"));
  CHECK(contains(e.what(), "pkg-1.0.tar.gz"));
  CHECK(contains(e.what(), "pkg-1.0.zip"));
}

TEST_CASE("select_wheel lists every refused file of the pinned version") {
  auto line = lock_line("pkg==1.0");
  auto e = error_of([&] {
    python::select_wheel(
        line, {file("pkg-1.0-cp311-cp311-win_amd64.whl"), file("pkg-1.0-cp312-cp312-manylinux_2_17_x86_64.whl")},
        facts(), true);
  });
  CHECK(e.kind() == util::ErrorKind::incompatible);
  CHECK(contains(e.what(), "pkg-1.0-cp311-cp311-win_amd64.whl"));
  CHECK(contains(e.what(), "pkg-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"));
  CHECK(contains(e.what(), "CPython 3.11"));
}

TEST_CASE("select_wheel: no file of the pinned version lists the versions the index has") {
  auto line = lock_line("pkg==1.0");
  std::vector<IndexFile> files = {file("pkg-0.9-py3-none-any.whl"), file("pkg-1.1-py3-none-any.whl"),
                                  file("pkg-1.10-py3-none-any.whl"), file("pkg-1.2.tar.gz")};
  auto e = error_of([&] { python::select_wheel(line, files, facts(), true); });
  CHECK(e.kind() == util::ErrorKind::incompatible);
  CHECK(contains(e.what(), "requirements.lock:7"));
  CHECK(contains(e.what(), "pkg==1.0"));
  CHECK(contains(e.what(), "1.10, 1.1, 0.9"));

  auto none = error_of([&] { python::select_wheel(line, {}, facts(), true); });
  CHECK(none.kind() == util::ErrorKind::incompatible);
  CHECK(contains(none.what(), "lists no file of pkg"));
}

// ---- check_closure ----

TEST_CASE("check_closure: requirements met by the lock or by the base image pass") {
  auto f = facts({{"six", "1.16.0"}, {"setuptools", "69.0.0"}});
  std::vector<ClosureInput> locked = {
      input("alpha", "1.0", {"beta>=2.0", "six", "setuptools (>=60)", "Beta[fast]<3; python_version >= \"3.8\""}),
      input("beta", "2.1", {}, {}, 2),
  };
  CHECK_NOTHROW(python::check_closure(locked, f, "requirements.lock"));
}

TEST_CASE("check_closure names each missing requirement and who needs it") {
  std::vector<ClosureInput> locked = {input("alpha", "1.0", {"zeta>=1.0", "beta"}),
                                      input("beta", "2.0", {"eta"}, {}, 2)};
  auto e = error_of([&] { python::check_closure(locked, facts(), "requirements.lock"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "requirements.lock:"));
  CHECK(contains(e.what(), "zeta (zeta>=1.0), needed by alpha 1.0 (requirements.lock:1)"));
  CHECK(contains(e.what(), "eta (eta), needed by beta 2.0 (requirements.lock:2)"));
  CHECK(contains(e.what(), "CPython 3.11"));
}

TEST_CASE("check_closure reports a version the lock or the base has that the requirement excludes") {
  auto f = facts({{"six", "1.16.0"}});
  std::vector<ClosureInput> locked = {input("alpha", "1.0", {"beta<2", "six>=2"}), input("beta", "2.1", {}, {}, 2)};
  auto e = error_of([&] { python::check_closure(locked, f, "requirements.lock"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "alpha 1.0 needs beta<2, but requirements.lock:2 has beta 2.1"));
  CHECK(contains(e.what(), "alpha 1.0 needs six>=2, but the base image has six 1.16.0"));
}

TEST_CASE("check_closure skips requirements whose marker is false for the target") {
  std::vector<ClosureInput> locked = {input(
      "alpha", "1.0",
      {"pywin32>=300; sys_platform == \"win32\"", "tomli; python_version < \"3.11\"", "gamma; extra == \"fast\""})};
  CHECK_NOTHROW(python::check_closure(locked, facts(), "requirements.lock"));
}

TEST_CASE("check_closure follows extras: beta[fast] pulls in beta's requirements for that extra") {
  ClosureInput beta = input("beta", "2.0", {"gamma>=1.0; extra == \"fast\"", "delta; extra == \"other\""}, {}, 2);
  SUBCASE("asked for by another locked distribution, with the extra's requirement missing") {
    std::vector<ClosureInput> locked = {input("alpha", "1.0", {"beta[fast]>=2"}), beta};
    auto e = error_of([&] { python::check_closure(locked, facts(), "requirements.lock"); });
    CHECK(contains(e.what(), "gamma (gamma>=1.0; extra == \"fast\"), needed by beta 2.0 (requirements.lock:2)"));
    CHECK_FALSE(contains(e.what(), "delta"));
  }
  SUBCASE("asked for by the lock line itself") {
    ClosureInput with_extra = beta;
    with_extra.extras = {"fast"};
    auto e = error_of([&] { python::check_closure({with_extra}, facts(), "requirements.lock"); });
    CHECK(contains(e.what(), "gamma"));
  }
  SUBCASE("met when gamma is locked") {
    std::vector<ClosureInput> locked = {input("alpha", "1.0", {"beta[fast]>=2"}), beta,
                                        input("gamma", "1.5", {}, {}, 3)};
    CHECK_NOTHROW(python::check_closure(locked, facts(), "requirements.lock"));
  }
  SUBCASE("an extra nobody asks for adds nothing") {
    std::vector<ClosureInput> locked = {input("alpha", "1.0", {"beta>=2"}), beta};
    CHECK_NOTHROW(python::check_closure(locked, facts(), "requirements.lock"));
  }
}

TEST_CASE("check_closure follows nested extras") {
  SUBCASE("through another distribution's extra") {
    std::vector<ClosureInput> locked = {
        input("alpha", "1.0", {"beta[fast]"}),
        input("beta", "2.0", {"gamma[turbo]; extra == \"fast\""}, {}, 2),
        input("gamma", "3.0", {"delta>=1; extra == \"turbo\""}, {}, 3),
    };
    auto e = error_of([&] { python::check_closure(locked, facts(), "requirements.lock"); });
    CHECK(contains(e.what(), "delta (delta>=1; extra == \"turbo\"), needed by gamma 3.0 (requirements.lock:3)"));
  }
  SUBCASE("through the distribution's own extras (an 'all' extra)") {
    std::vector<ClosureInput> locked = {
        input("alpha", "1.0", {"beta[all]"}),
        input("beta", "2.0", {"beta[fast]; extra == \"all\"", "gamma; extra == \"fast\""}, {}, 2),
    };
    auto e = error_of([&] { python::check_closure(locked, facts(), "requirements.lock"); });
    CHECK(contains(e.what(), "gamma (gamma; extra == \"fast\"), needed by beta 2.0 (requirements.lock:2)"));
  }
  SUBCASE("met when the innermost requirement is locked") {
    std::vector<ClosureInput> locked = {
        input("alpha", "1.0", {"beta[fast]"}),
        input("beta", "2.0", {"gamma[turbo]; extra == \"fast\""}, {}, 2),
        input("gamma", "3.0", {"delta>=1; extra == \"turbo\""}, {}, 3),
        input("delta", "1.1", {}, {}, 4),
    };
    CHECK_NOTHROW(python::check_closure(locked, facts(), "requirements.lock"));
  }
}

} // namespace unit_wheel_fetch_test
