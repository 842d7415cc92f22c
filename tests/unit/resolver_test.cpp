// The PubGrub resolver (python/resolver.hpp) over an in-memory source: PubGrub's own
// worked examples, extras, markers, pre-releases, yanked versions, constraints,
// preferred versions, long backtracking, and the reports of failures.
#include <doctest/doctest.h>

#include "python/resolver.hpp"
#include "util/error.hpp"

#include <map>
#include <string>
#include <vector>

namespace unit_resolver_test {

using python::Requirement;
using python::resolver::Candidate;
using python::resolver::Input;
using python::resolver::Options;
using python::resolver::Resolution;
using python::resolver::Source;

namespace {

struct Release {
  std::vector<std::string> deps;
  bool yanked = false;
  bool installed = false;
};

// project -> version -> what it requires.
class MemSource : public Source {
public:
  std::map<std::string, std::map<std::string, Release>> projects;
  std::map<std::string, int> page_requests;
  int metadata_requests = 0;

  void add(const std::string& key, const std::string& version, std::vector<std::string> deps = {},
           bool yanked = false) {
    projects[key][version] = {std::move(deps), yanked, false};
  }
  std::vector<Candidate> candidates(const std::string& key) override {
    ++page_requests[key];
    std::vector<Candidate> out;
    auto it = projects.find(key);
    if (it == projects.end()) {
      return out;
    }
    for (const auto& [v, r] : it->second) {
      Candidate c;
      c.version = *python::pep440::Version::parse(v);
      c.text = v;
      c.yanked = r.yanked;
      c.installed = r.installed;
      out.push_back(c);
    }
    return out;
  }
  std::vector<std::string> requires_dist(const std::string& key, const Candidate& c) override {
    ++metadata_requests;
    return projects.at(key).at(c.text).deps;
  }
};

std::vector<Input> inputs(const std::vector<std::string>& lines, const std::vector<std::string>& constraints = {}) {
  std::vector<Input> out;
  int n = 0;
  for (const auto& l : lines) {
    out.push_back({Requirement::parse(l), "requirements.in:" + std::to_string(++n), false});
  }
  n = 0;
  for (const auto& l : constraints) {
    out.push_back({Requirement::parse(l), "constraints.txt:" + std::to_string(++n), true});
  }
  return out;
}

Options target() {
  Options o;
  o.markers = {{"python_version", "3.10"},
               {"python_full_version", "3.10.12"},
               {"os_name", "posix"},
               {"sys_platform", "linux"},
               {"platform_system", "Linux"},
               {"platform_machine", "x86_64"},
               {"platform_release", ""},
               {"platform_version", ""},
               {"implementation_name", "cpython"},
               {"implementation_version", "3.10.12"},
               {"platform_python_implementation", "CPython"}};
  return o;
}

// "name==version" of each chosen package, sorted.
std::vector<std::string> picked(const Resolution& r) {
  std::vector<std::string> out;
  for (const auto& p : r.packages) {
    out.push_back(p.key + "==" + p.candidate.text);
  }
  return out;
}

std::vector<std::string> solve(MemSource& s, const std::vector<std::string>& lines,
                               const std::vector<std::string>& constraints = {}, Options o = target()) {
  return picked(python::resolver::resolve(inputs(lines, constraints), s, o));
}

std::string failure(MemSource& s, const std::vector<std::string>& lines, Options o = target()) {
  try {
    python::resolver::resolve(inputs(lines), s, o);
  } catch (const util::Error& e) {
    CHECK(e.kind() == util::ErrorKind::input);
    return e.what();
  }
  FAIL("the resolution succeeded");
  return "";
}

using V = std::vector<std::string>;

} // namespace

TEST_SUITE("resolver") {

  TEST_CASE("resolver: the newest versions when nothing conflicts, and each package's requirers") {
    MemSource s;
    s.add("a", "1.0", {"b>=1"});
    s.add("a", "2.0", {"b>=2", "c"});
    s.add("b", "1.0");
    s.add("b", "2.0");
    s.add("b", "3.0");
    s.add("c", "0.5");
    auto r = python::resolver::resolve(inputs({"a"}), s, target());
    CHECK(picked(r) == V{"a==2.0", "b==3.0", "c==0.5"});
    CHECK(r.packages[0].via == V{"requirements.in:1"});
    CHECK(r.packages[1].via == V{"a 2.0"});
    CHECK(r.conflicts == 0);
  }

  TEST_CASE("resolver: PubGrub's examples: a conflict avoided while deciding, and one resolved by learning") {
    MemSource s;
    s.add("foo", "1.0.0");
    s.add("foo", "1.1.0", {"bar>=2.0.0,<3.0.0"});
    s.add("bar", "1.0.0");
    s.add("bar", "1.1.0");
    s.add("bar", "2.0.0");
    CHECK(solve(s, {"foo>=1.0.0,<2.0.0", "bar>=1.0.0,<2.0.0"}) == V{"bar==1.1.0", "foo==1.0.0"});

    MemSource t;
    t.add("foo", "1.0.0");
    t.add("foo", "2.0.0", {"bar>=1.0.0,<2.0.0"});
    t.add("bar", "1.0.0", {"foo>=1.0.0,<2.0.0"});
    auto r = python::resolver::resolve(inputs({"foo>=1.0.0"}), t, target());
    CHECK(picked(r) == V{"foo==1.0.0"});
    CHECK(r.conflicts >= 1);
  }

  TEST_CASE("resolver: a failure is a derivation from the input line to the incompatible pair") {
    MemSource s;
    s.add("foo", "1.0.0", {"bar>=2.0.0,<3.0.0"});
    s.add("bar", "2.0.0", {"baz>=3.0.0,<4.0.0"});
    s.add("baz", "1.0.0");
    s.add("baz", "3.0.0");
    std::string m = failure(s, {"foo>=1.0.0,<2.0.0", "baz>=1.0.0,<2.0.0"});
    CHECK(m.find("no set of versions satisfies the requirements") != std::string::npos);
    CHECK(m.find("requirements.in:1 needs foo>=1.0.0,<2.0.0") != std::string::npos);
    CHECK(m.find("requirements.in:2 needs baz>=1.0.0,<2.0.0") != std::string::npos);
    CHECK(m.find("foo 1.0.0 depends on bar>=2.0.0,<3.0.0") != std::string::npos);
    CHECK(m.find("bar 2.0.0 depends on baz>=3.0.0,<4.0.0") != std::string::npos);
    CHECK(m.find("the requirements need baz 3.0.0") != std::string::npos);
    CHECK(m.find("the requirements cannot be met") != std::string::npos);
  }

  TEST_CASE("resolver: a project with no version that fits says so, naming who needs it") {
    MemSource s;
    s.add("app", "1.0", {"missing>=1"});
    s.add("old", "0.1");
    std::string m = failure(s, {"app"});
    CHECK(m.find("app 1.0 depends on missing>=1, and the index has no version of missing") != std::string::npos);
    m = failure(s, {"old>=1"});
    CHECK(m.find("requirements.in:1 needs old>=1, and no version of old on the index matches") != std::string::npos);
  }

  TEST_CASE("resolver: extras are packages of their own, at the project's version") {
    MemSource s;
    s.add("req", "1.0", {"idna", "socks; extra == \"socks\""});
    s.add("req", "2.0", {"idna", "socks>=2; extra == \"socks\""});
    s.add("idna", "3.0");
    s.add("socks", "1.0");
    s.add("socks", "2.5");
    auto r = python::resolver::resolve(inputs({"req[socks]"}), s, target());
    CHECK(picked(r) == V{"idna==3.0", "req==2.0", "socks==2.5"});
    CHECK(r.packages[1].extras == std::set<std::string>{"socks"});
    CHECK(solve(s, {"req"}) == V{"idna==3.0", "req==2.0"});
    // The extra's requirement narrows the project: socks<2 rules out req 2.0.
    CHECK(solve(s, {"req[socks]", "socks<2"}) == V{"idna==3.0", "req==1.0", "socks==1.0"});
  }

  TEST_CASE("resolver: markers are the target's, on input lines and Requires-Dist alike") {
    MemSource s;
    s.add("a", "1.0", {"py2only; python_version < \"3\"", "linuxonly; sys_platform == \"linux\""});
    s.add("linuxonly", "1.0");
    s.add("winonly", "1.0");
    CHECK(solve(s, {"a", "winonly; sys_platform == \"win32\""}) == V{"a==1.0", "linuxonly==1.0"});
  }

  TEST_CASE("resolver: pre-releases only when asked for, named, or the only fit; yanked only when pinned") {
    MemSource s;
    s.add("b", "1.0");
    s.add("b", "2.0b1");
    s.add("c", "3.0rc1");
    s.add("y", "1.0");
    s.add("y", "1.1", {}, true);
    CHECK(solve(s, {"b"}) == V{"b==1.0"});
    CHECK(solve(s, {"b>=2.0b1"}) == V{"b==2.0b1"});
    CHECK(solve(s, {"c"}) == V{"c==3.0rc1"});
    Options pre = target();
    pre.pre = true;
    CHECK(solve(s, {"b"}, {}, pre) == V{"b==2.0b1"});
    CHECK(solve(s, {"y"}) == V{"y==1.0"});
    CHECK(solve(s, {"y==1.1"}) == V{"y==1.1"});
  }

  TEST_CASE("resolver: constraints bind only what is in the closure") {
    MemSource s;
    s.add("a", "1.0", {"c"});
    s.add("c", "1.0");
    s.add("c", "2.0");
    s.add("unused", "1.0");
    CHECK(solve(s, {"a"}, {"c<2", "unused>5"}) == V{"a==1.0", "c==1.0"});
    Options o = target();
    o.preferred["c"] = "1.0";
    CHECK(solve(s, {"a"}, {}, o) == V{"a==1.0", "c==1.0"});
    o.preferred["c"] = "0.9"; // not offered: the newest
    CHECK(solve(s, {"a"}, {}, o) == V{"a==1.0", "c==2.0"});
  }

  TEST_CASE("resolver: a range that forces many backtracks finishes, each conflict learned once") {
    MemSource s;
    for (int i = 1; i <= 60; ++i) {
      std::vector<std::string> deps;
      if (i > 1) {
        deps.push_back("b==" + std::to_string(i) + ".0");
      }
      s.add("a", std::to_string(i) + ".0", deps);
      s.add("b", std::to_string(i) + ".0", {"gone>=1"});
    }
    auto r = python::resolver::resolve(inputs({"a"}), s, target());
    CHECK(picked(r) == V{"a==1.0"});
    CHECK(r.conflicts >= 50);
    CHECK(s.metadata_requests < 200);
    Options few = target();
    few.max_steps = 10;
    std::string m = failure(s, {"a"}, few);
    CHECK(m.find("did not finish within 10 steps") != std::string::npos);
  }

  TEST_CASE("resolver: thousands of versions, a diamond of ranges, in a step per package") {
    // 40 packages of 100 versions each; p<i> needs p<i+1> and p<i+2> with ranges that
    // only the older half of each meets, so newest-first must step down once per package.
    MemSource s;
    for (int i = 0; i < 40; ++i) {
      for (int v = 1; v <= 100; ++v) {
        std::vector<std::string> deps;
        for (int j = i + 1; j <= std::min(i + 2, 39); ++j) {
          deps.push_back("p" + std::to_string(j) + "<=50.0");
        }
        s.add("p" + std::to_string(i), std::to_string(v) + ".0", deps);
      }
    }
    auto r = python::resolver::resolve(inputs({"p0"}), s, target());
    REQUIRE(r.packages.size() == 40);
    CHECK(r.packages.front().candidate.text == "100.0"); // p0: nothing bounds it
    for (const auto& p : r.packages) {
      if (p.key != "p0") {
        CHECK(p.candidate.text == "50.0");
      }
    }
    CHECK(r.decisions <= 80);
    CHECK(s.metadata_requests <= 200);
  }

  TEST_CASE("resolver: a yanked-only range and an invalid Requires-Dist are errors") {
    MemSource s;
    s.add("y", "1.0");
    s.add("y", "1.1", {}, true);
    s.add("bad", "1.0", {"not a requirement ==="});
    CHECK(failure(s, {"y>=1.1"}).find("requirements.in:1 needs y>=1.1, and no version of y on the index matches") !=
          std::string::npos);
    CHECK(failure(s, {"bad"}).find("bad 1.0: Requires-Dist 'not a requirement ===' is not a valid requirement") !=
          std::string::npos);
  }
}

} // namespace unit_resolver_test
