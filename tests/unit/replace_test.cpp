// A wheels layer against what is installed where it lands (python/replace.hpp): pip's
// uninstall as whiteouts, "already satisfied", Debian's packages shadowed, and the
// requirements of what stays.
#include <doctest/doctest.h>

#include "tests/unit/python_support.hpp"
#include "tests/unit/support.hpp"
#include "tests/unit/view_support.hpp"

#include "python/installed.hpp"
#include "python/replace.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace unit_replace_test {

using python::Incoming;
using python::Replacement;
using test_support::contains;

namespace {

const std::string k_site = "usr/local/lib/python3.10/dist-packages";

// The Paddle-shaped tree: opt-einsum 3.3.0 installed by pip (modules, bytecode, a
// script in usr/local/bin), paddlepaddle-gpu pinning it, PyYAML from Debian, an
// egg-info without RECORD.
layers::BaseView paddle_tree(bool stray_pyc) {
  std::vector<std::pair<std::string, std::string>> files = {
      {k_site + "/opt_einsum/__init__.py", "x"},
      {k_site + "/opt_einsum/paths.py", "x"},
      {k_site + "/opt_einsum/__pycache__/__init__.cpython-310.pyc", "x"},
      {k_site + "/opt_einsum/__pycache__/paths.cpython-310.pyc", "x"},
      {k_site + "/opt_einsum/__pycache__/paths.cpython-310.opt-1.pyc", "x"},
      {"usr/local/bin/opt-info", "#!/usr/bin/python3\n"},
      {"usr/local/bin/keep-me", "x"},
      {k_site + "/opt_einsum-3.3.0.dist-info/METADATA", "Name: opt_einsum\nVersion: 3.3.0\n"},
      {k_site + "/opt_einsum-3.3.0.dist-info/INSTALLER", "pip\n"},
      {k_site + "/opt_einsum-3.3.0.dist-info/RECORD",
       "opt_einsum/__init__.py,sha256=a,1\nopt_einsum/paths.py,sha256=b,1\n"
       "../../../bin/opt-info,sha256=c,20\n../../../../../../../etc/passwd,,\n../../../../../etc/passwd,,\n"
       "opt_einsum-3.3.0.dist-info/METADATA,,\nopt_einsum-3.3.0.dist-info/RECORD,,\n"},
      {k_site + "/paddle/__init__.py", "x"},
      {k_site + "/paddlepaddle_gpu-2.6.1.dist-info/METADATA",
       "Name: paddlepaddle-gpu\nVersion: 2.6.1\nRequires-Dist: opt-einsum ==3.3.0\n"
       "Requires-Dist: protobuf >=3.20.2\nRequires-Dist: pytest ==7.0 ; extra == \"test\"\n"
       "Requires-Dist: pyyaml <1 ; python_version < \"3\"\n"},
      {k_site + "/paddlepaddle_gpu-2.6.1.dist-info/RECORD", "paddle/__init__.py,,\n"},
      {"usr/lib/python3/dist-packages/yaml/__init__.py", "x"},
      {"usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/METADATA", "Name: PyYAML\nVersion: 6.0\n"},
      {"usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/INSTALLER", "debian\n"},
      {"usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/RECORD", "yaml/__init__.py,,\n"},
      {k_site + "/legacy-1.0.egg-info", "Name: legacy\nVersion: 1.0\n"},
      {"etc/passwd", "root:x:0:0::/root:/bin/sh\n"},
  };
  if (stray_pyc) { // bytecode of a module no RECORD lists: the directory is not left empty
    files.push_back({k_site + "/opt_einsum/__pycache__/local.cpython-310.pyc", "x"});
  }
  return test_support::view_of({files});
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += s + "\n";
  }
  return out;
}

Incoming in(const std::string& name, const std::string& version) {
  return Incoming{name, version, name + "-" + version + "-py3-none-any.whl", "requirements.lock:3"};
}

} // namespace

TEST_SUITE("replace") {
  TEST_CASE("plan_install: another version is replaced; its RECORD paths, bytecode and .dist-info are removals") {
    auto view = paddle_tree(false);
    auto installed = python::installed_distributions(view);
    auto plan = python::plan_install(view, installed, {in("opt-einsum", "3.4.0")});
    REQUIRE(plan.replacements.size() == 1);
    const Replacement& r = plan.replacements[0];
    CHECK(r.action == Replacement::Action::replace);
    CHECK(r.old_version == "3.3.0");
    CHECK(r.new_version == "3.4.0");
    CHECK(r.location == k_site + "/opt_einsum-3.3.0.dist-info");
    CHECK(plan.skip.empty());
    std::set<std::string> paths;
    for (const auto& [p, limit] : plan.removals) {
      paths.insert(p);
    }
    CHECK(paths == std::set<std::string>{
                       k_site + "/opt_einsum/__init__.py",
                       k_site + "/opt_einsum/paths.py",
                       k_site + "/opt_einsum/__pycache__/__init__.cpython-310.pyc",
                       k_site + "/opt_einsum/__pycache__/paths.cpython-310.pyc",
                       k_site + "/opt_einsum/__pycache__/paths.cpython-310.opt-1.pyc",
                       "usr/local/bin/opt-info",
                       k_site + "/opt_einsum-3.3.0.dist-info/METADATA",
                       k_site + "/opt_einsum-3.3.0.dist-info/RECORD",
                       k_site + "/opt_einsum-3.3.0.dist-info",
                   });
    // A RECORD path that leaves the root, or the install scheme's prefix (usr/local), is
    // never a removal: /etc/passwd stays.
    CHECK(plan.removals.count("etc/passwd") == 0);
    CHECK(contains(python::describe(r), "replaces opt_einsum 3.3.0 -> 3.4.0"));
    CHECK(python::to_json(r)["action"] == "replace");
  }

  TEST_CASE("whiteouts: what the new wheel writes again stays; emptied directories go as one") {
    auto view = paddle_tree(false);
    auto plan = python::plan_install(view, python::installed_distributions(view), {in("opt-einsum", "3.4.0")});
    SUBCASE("the new version writes opt_einsum/__init__.py again") {
      std::set<std::string> written = {k_site + "/opt_einsum", k_site + "/opt_einsum/__init__.py",
                                       k_site + "/opt_einsum-3.4.0.dist-info",
                                       k_site + "/opt_einsum-3.4.0.dist-info/METADATA"};
      auto outs = python::whiteouts(view, plan, written);
      CHECK(joined(outs) == joined(std::vector<std::string>{
                                "usr/local/bin/opt-info",
                                k_site + "/opt_einsum-3.3.0.dist-info",
                                k_site + "/opt_einsum/__pycache__",
                                k_site + "/opt_einsum/paths.py",
                            }));
    }
    SUBCASE("nothing of it written again: the package directory goes whole, the site and bin dirs stay") {
      auto outs = python::whiteouts(view, plan, {k_site + "/other/__init__.py"});
      CHECK(joined(outs) == joined(std::vector<std::string>{
                                "usr/local/bin/opt-info",
                                k_site + "/opt_einsum",
                                k_site + "/opt_einsum-3.3.0.dist-info",
                            }));
    }
    SUBCASE("a stray .pyc keeps its directory and the package directory") {
      auto stray = paddle_tree(true);
      auto p2 = python::plan_install(stray, python::installed_distributions(stray), {in("opt-einsum", "3.4.0")});
      auto outs = python::whiteouts(stray, p2, {});
      CHECK(joined(outs) == joined(std::vector<std::string>{
                                "usr/local/bin/opt-info",
                                k_site + "/opt_einsum-3.3.0.dist-info",
                                k_site + "/opt_einsum/__init__.py",
                                k_site + "/opt_einsum/__pycache__/__init__.cpython-310.pyc",
                                k_site + "/opt_einsum/__pycache__/paths.cpython-310.opt-1.pyc",
                                k_site + "/opt_einsum/__pycache__/paths.cpython-310.pyc",
                                k_site + "/opt_einsum/paths.py",
                            }));
    }
  }

  TEST_CASE("plan_install: the same version is already satisfied; Debian's and RECORD-less ones are shadowed") {
    auto view = paddle_tree(false);
    auto installed = python::installed_distributions(view);
    auto plan = python::plan_install(view, installed,
                                     {in("opt_einsum", "3.3.0.0"), in("pyyaml", "6.0.1"), in("Legacy", "2.0")});
    REQUIRE(plan.replacements.size() == 3);
    CHECK(plan.replacements[0].action == Replacement::Action::satisfied);
    CHECK(plan.skip == std::set<std::string>{"opt-einsum"});
    CHECK(contains(python::describe(plan.replacements[0]), "already satisfied"));
    CHECK(plan.replacements[1].action == Replacement::Action::shadow);
    CHECK(contains(plan.replacements[1].reason, "Debian"));
    CHECK(plan.replacements[2].action == Replacement::Action::shadow);
    CHECK(contains(plan.replacements[2].reason, "no RECORD"));
    CHECK(plan.removals.empty());
  }

  TEST_CASE("conflicts: a pin of what stays is named with both sides; markers and extras count as pip counts them") {
    auto view = paddle_tree(false);
    auto installed = python::installed_distributions(view);
    auto env = python::marker_environment(test_support::target(10), "3.10.12");
    auto broken = python::conflicts(installed, {in("opt-einsum", "3.4.0")}, env);
    REQUIRE(broken.size() == 1);
    CHECK(contains(broken[0], "paddlepaddle-gpu 2.6.1"));
    CHECK(contains(broken[0], "requires 'opt-einsum ==3.3.0'"));
    CHECK(contains(broken[0], "requirements.lock:3 installs opt-einsum 3.4.0"));
    // The same version, a version the specifier admits, an extra nobody asked for and a
    // marker false for the target break nothing.
    CHECK(python::conflicts(installed, {in("opt-einsum", "3.3.0")}, env).empty());
    CHECK(python::conflicts(installed, {in("protobuf", "4.25.3")}, env).empty());
    CHECK(python::conflicts(installed, {in("pytest", "8.0")}, env).empty());
    CHECK(python::conflicts(installed, {in("pyyaml", "6.0.1")}, env).empty());
    CHECK(python::conflicts(installed, {in("protobuf", "3.19.0")}, env).size() == 1);
  }
}

// Issue 34: a wheels layer plans against the target interpreter's environment only.
TEST_SUITE("python target environment") {
  const std::string k_venv = "opt/venv/lib/python3.10/site-packages";
  const std::string k_conda = "opt/conda/lib/python3.10/site-packages";
  const std::string k_pkgs = "opt/conda/pkgs/six-1.16.0-py_0/site-packages";
  const std::string k_etc = "etc/lib/python3/site-packages";

  std::vector<std::pair<std::string, std::string>> dist(const std::string& site, const std::string& name,
                                                        const std::string& version, const std::string& record) {
    std::string info = site + "/" + name + "-" + version + ".dist-info";
    return {{info + "/METADATA", "Name: " + name + "\nVersion: " + version + "\n"},
            {info + "/INSTALLER", "pip\n"},
            {info + "/RECORD", record}};
  }

  layers::BaseView many_environments() {
    std::vector<std::pair<std::string, std::string>> files = {
        {"usr/bin/python3.10", "elf"},
        {"opt/venv/bin/python3.10", "elf"},
        {"opt/venv/bin/six-tool", "x"},
        {"opt/venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n"},
        {k_venv + "/six.py", "x"},
        {k_conda + "/six.py", "x"},
        {k_pkgs + "/six.py", "x"},
        {k_etc + "/six.py", "x"},
        {"etc/shadow", "root:*:19000:0:99999:7:::\n"},
    };
    for (auto& f : dist(k_venv, "six", "1.15.0", "six.py,,\n../../../bin/six-tool,,\n")) {
      files.push_back(f);
    }
    for (auto& f : dist(k_conda, "six", "1.16.0", "six.py,,\n")) {
      files.push_back(f);
    }
    for (auto& f : dist(k_pkgs, "six", "1.16.0", "six.py,,\n")) {
      files.push_back(f);
    }
    for (auto& f : dist(k_etc, "six", "1.14.0", "six.py,,\n../../../shadow,,\n")) {
      files.push_back(f);
    }
    return test_support::view_of({files});
  }

  python::PythonTarget debian_target() {
    python::PythonTarget t;
    t.minor = 10;
    t.interpreter = "/usr/bin/python3.10";
    t.site_packages = "/usr/local/lib/python3.10/dist-packages";
    t.scripts_dir = "/usr/local/bin";
    t.prefix = "/usr/local";
    return t;
  }

  TEST_CASE("another venv, a conda environment, conda's pkgs/ and a site-packages under /etc are not the target's") {
    auto view = many_environments();
    auto all = python::installed_distributions(view);
    CHECK(all.size() == 4);
    python::PythonTarget t = debian_target();
    CHECK(python::target_distributions(view, t, all).empty());
    // So the wheel is neither "already satisfied" by another environment's copy nor does
    // it remove anything there (nor /etc/shadow through a RECORD that climbs out).
    std::vector<python::Incoming> in = {{"six", "1.16.0", "six-1.16.0-py2.py3-none-any.whl", {}}};
    auto plan = python::plan_install(view, python::target_distributions(view, t, all), in);
    CHECK(plan.replacements.empty());
    CHECK(plan.skip.empty());
    CHECK(plan.removals.empty());
  }

  TEST_CASE("a venv's interpreter sees its own site-packages; the system's only when pyvenv.cfg says so") {
    auto view = many_environments();
    auto all = python::installed_distributions(view);
    python::PythonTarget t = debian_target();
    t.interpreter = "/opt/venv/bin/python3.10";
    t.site_packages = "/" + k_venv;
    t.scripts_dir = "/opt/venv/bin";
    t.prefix = "/opt/venv";
    auto mine = python::target_distributions(view, t, all);
    REQUIRE(mine.size() == 1);
    CHECK(mine[0].location == k_venv + "/six-1.15.0.dist-info");
    auto dirs = python::target_site_dirs(view, t);
    CHECK(std::find(dirs.begin(), dirs.end(), "usr/lib/python3/dist-packages") == dirs.end());
    std::vector<python::Incoming> in = {{"six", "1.16.0", "six-1.16.0-py2.py3-none-any.whl", {}}};
    auto plan = python::plan_install(view, mine, in, {"opt/venv"});
    REQUIRE(plan.replacements.size() == 1);
    CHECK(plan.removals.count(k_venv + "/six.py") == 1);
    CHECK(plan.removals.count("opt/venv/bin/six-tool") == 1);
    for (const auto& removal : plan.removals) {
      const std::string& path = removal.first;
      CHECK_MESSAGE(path.rfind("opt/venv/", 0) == 0, path);
    }
  }

  TEST_CASE("plan_install: roots bound every removal, whatever the RECORD says") {
    auto view = many_environments();
    auto all = python::installed_distributions(view);
    std::vector<python::Distribution> etc;
    for (const auto& d : all) {
      if (d.location.rfind(k_etc, 0) == 0) {
        etc.push_back(d);
      }
    }
    REQUIRE(etc.size() == 1);
    std::vector<python::Incoming> in = {{"six", "1.16.0", "six-1.16.0-py2.py3-none-any.whl", {}}};
    // Without roots, the old rule (the scheme's prefix, here "etc") would reach /etc/shadow.
    auto unbounded = python::plan_install(view, etc, in);
    CHECK(unbounded.removals.count("etc/shadow") == 1);
    auto bounded = python::plan_install(view, etc, in, {"usr/local"});
    CHECK(bounded.removals.empty());
  }

  TEST_CASE("plan_uninstall: pip uninstall's removals, the same as a replacement's; nothing installed") {
    auto view = paddle_tree(false);
    auto installed = python::installed_distributions(view);
    auto replaced = python::plan_install(view, installed, {in("opt-einsum", "3.4.0")});
    auto plan = python::plan_uninstall(view, installed, {{"Opt_Einsum", "spec.yaml:7:18: layer 'slim'"}});
    REQUIRE(plan.replacements.size() == 1);
    CHECK(plan.replacements[0].action == Replacement::Action::uninstall);
    CHECK(plan.replacements[0].old_version == "3.3.0");
    CHECK(plan.replacements[0].new_version.empty());
    CHECK(plan.removals == replaced.removals); // RECORD's files, bytecode, the script, the .dist-info
    CHECK(plan.removals.count("etc/passwd") == 0);
    CHECK(plan.skip.empty());
    CHECK(contains(python::describe(plan.replacements[0]), "uninstalls opt_einsum 3.3.0 (removes /" + k_site));
    CHECK(python::to_json(plan.replacements[0])["action"] == "uninstall");
    auto out = python::whiteouts(view, plan, {});
    CHECK(std::find(out.begin(), out.end(), k_site + "/opt_einsum-3.3.0.dist-info") != out.end());
    CHECK(std::find(out.begin(), out.end(), "usr/local/bin/keep-me") == out.end());
  }

  TEST_CASE("plan_uninstall: a name nothing has, Debian's package and one without a RECORD are errors naming where") {
    auto view = paddle_tree(false);
    auto installed = python::installed_distributions(view);
    const std::string where = "spec.yaml:7:18: layer 'slim'";
    auto none = test_support::error_of([&] { python::plan_uninstall(view, installed, {{"opencv-python", where}}); });
    CHECK(none.kind() == util::ErrorKind::input);
    CHECK(contains(none.what(), where + " uninstalls opencv-python, which is not installed"));
    auto debian = test_support::error_of([&] { python::plan_uninstall(view, installed, {{"pyyaml", where}}); });
    CHECK(contains(debian.what(), "PyYAML 6.0 at /usr/lib/python3/dist-packages/PyYAML-6.0.dist-info"));
    CHECK(contains(debian.what(), "installed by Debian's package manager"));
    auto legacy = test_support::error_of([&] { python::plan_uninstall(view, installed, {{"legacy", where}}); });
    CHECK(contains(legacy.what(), "it has no RECORD"));
  }
}

} // namespace unit_replace_test
