#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "python/pep440.hpp"
#include "python/requirement.hpp"
#include "python/tags.hpp"
#include "python/wheel.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using python::Marker;
using python::Requirement;
using python::WheelName;
using python::pep440::Specifier;
using python::pep440::SpecifierSet;
using python::pep440::Version;
using test_support::contains;

namespace {

Version v(const std::string& text) {
  auto parsed = Version::parse(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

std::string norm(const std::string& text) {
  return v(text).str();
}

bool in(const std::string& specifiers, const std::string& version, bool prereleases = false) {
  return SpecifierSet::parse(specifiers).contains(v(version), prereleases);
}

// The message of the std::invalid_argument f throws.
template <typename F> std::string invalid(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  FAIL("expected std::invalid_argument");
  return {};
}

python::PythonTarget target(int minor = 11, std::optional<std::pair<int, int>> glibc = std::pair{2, 36},
                            std::string arch = "x86_64") {
  python::PythonTarget t;
  t.major = 3;
  t.minor = minor;
  t.arch = std::move(arch);
  t.glibc = glibc;
  return t;
}

std::map<std::string, std::string> env311() {
  return python::marker_environment(target(), "3.11.4");
}

bool eval(const std::string& marker, const std::set<std::string>& extras = {}) {
  return Marker::parse(marker).evaluate(env311(), extras);
}

std::size_t index_of(const std::vector<std::string>& tags, const std::string& tag) {
  auto it = std::find(tags.begin(), tags.end(), tag);
  REQUIRE_MESSAGE(it != tags.end(), tag);
  return static_cast<std::size_t>(it - tags.begin());
}

std::optional<std::size_t> rank(const std::string& filename, const python::PythonTarget& t) {
  return python::tag_rank(WheelName::parse(filename), python::supported_tags(t));
}

} // namespace

TEST_SUITE("pep440") {

  TEST_CASE("pep440 Version::parse normalises every spelling") {
    CHECK(norm("1.0") == "1.0");
    CHECK(norm("v1.0") == "1.0");
    CHECK(norm("  V1.0\n") == "1.0");
    CHECK(norm("1.0.0") == "1.0.0"); // release kept as written
    CHECK(norm("01.002") == "1.2");
    CHECK(norm("1!2.0") == "1!2.0");
    CHECK(norm("0!2.0") == "2.0");
    CHECK(norm("1.0a1") == "1.0a1");
    CHECK(norm("1.0alpha1") == "1.0a1");
    CHECK(norm("1.0-ALPHA.1") == "1.0a1");
    CHECK(norm("1.0beta2") == "1.0b2");
    CHECK(norm("1.0_b2") == "1.0b2");
    CHECK(norm("1.0c1") == "1.0rc1");
    CHECK(norm("1.0pre1") == "1.0rc1");
    CHECK(norm("1.0preview1") == "1.0rc1");
    CHECK(norm("1.0-RC1") == "1.0rc1");
    CHECK(norm("1.0rc") == "1.0rc0");
    CHECK(norm("1.0a.") == "1.0a0"); // the PEP's grammar allows a dangling separator
    CHECK(norm("1.0-1") == "1.0.post1");
    CHECK(norm("1.0-r1") == "1.0.post1");
    CHECK(norm("1.0rev2") == "1.0.post2");
    CHECK(norm("1.0.post") == "1.0.post0");
    CHECK(norm("1.0_post_3") == "1.0.post3");
    CHECK(norm("1.0dev") == "1.0.dev0");
    CHECK(norm("1.0-dev-4") == "1.0.dev4");
    CHECK(norm("1.0a1-1.dev2") == "1.0a1.post1.dev2");
    CHECK(norm("2.6.1.post118") == "2.6.1.post118");
    CHECK(norm("2.6.1+cu118") == "2.6.1+cu118");
    CHECK(norm("1.0+Ubuntu-1_02.x") == "1.0+ubuntu.1.2.x");
    CHECK(norm("20230101") == "20230101");

    auto full = v("3!1.2.3rc4.post5.dev6+abc.7");
    CHECK(full.epoch == 3);
    CHECK(full.release == std::vector<long long>{1, 2, 3});
    REQUIRE(full.pre.has_value());
    CHECK(full.pre->first == "rc");
    CHECK(full.pre->second == 4);
    CHECK(full.post == 5);
    CHECK(full.dev == 6);
    CHECK(full.local == std::vector<std::string>{"abc", "7"});
    CHECK(full.public_str() == "3!1.2.3rc4.post5.dev6");
    CHECK(full.base_version().str() == "3!1.2.3");
    CHECK(full.is_prerelease());
    CHECK(full.is_postrelease());
    CHECK_FALSE(v("1.0.post1").is_prerelease());
    CHECK(v("1.0.dev1").is_prerelease());
    CHECK(v("1.0.post1.dev1").is_prerelease());

    for (const std::string bad :
         {"", "v", "1.", "1..0", ".1", "1.0+", "1.0+a..b", "1.0++a", "1.0a1a2", "1.0 a1", "1.0-", "1!", "a1.0",
          "1.0.post1.post2", "1.0-dev-post1", "latest", "1.0+á", "99999999999999999999"}) {
      CAPTURE(bad);
      CHECK_FALSE(Version::parse(bad).has_value());
    }
  }

  TEST_CASE("pep440 ordering follows the PEP's example list") {
    // PEP 440, "Summary of permitted suffixes and relative ordering", plus epochs.
    const std::vector<std::string> sorted = {"1.dev0",
                                             "1.0.dev456",
                                             "1.0a1",
                                             "1.0a2.dev456",
                                             "1.0a12.dev456",
                                             "1.0a12",
                                             "1.0b1.dev456",
                                             "1.0b2",
                                             "1.0b2.post345.dev456",
                                             "1.0b2.post345",
                                             "1.0rc1.dev456",
                                             "1.0rc1",
                                             "1.0",
                                             "1.0+abc.5",
                                             "1.0+abc.7",
                                             "1.0+5",
                                             "1.0.post456.dev34",
                                             "1.0.post456",
                                             "1.0.15",
                                             "1.1.dev1",
                                             "1.1",
                                             "2.0",
                                             "1!0.1"};
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      for (std::size_t j = 0; j < sorted.size(); ++j) {
        CAPTURE(sorted[i]);
        CAPTURE(sorted[j]);
        int expected = i < j ? -1 : (i > j ? 1 : 0);
        CHECK(python::pep440::compare(v(sorted[i]), v(sorted[j])) == expected);
      }
    }
    CHECK(v("1.0") == v("1.0.0"));
    CHECK(v("1.0") == v("v1.0.0.0"));
    CHECK(v("1.0rc1") == v("1.0c1"));
    CHECK(v("1.0+1") == v("1.0+01"));
    CHECK(v("1.0.post1") > v("1.0+local"));
    CHECK(v("1.0+abc") < v("1.0+abc.1"));
    CHECK(v("1.0+1") > v("1.0+zzz"));
    CHECK(v("1.0+10") > v("1.0+9"));
    CHECK(v("1.0a1") < v("1.0a1.post1"));
    CHECK(v("1.0a1.post1.dev1") < v("1.0a1.post1"));
    CHECK(v("1.10") > v("1.9"));
    CHECK(v("1.0") != v("1.0+1"));
    CHECK(v("1.0") <= v("1.0"));
  }

  TEST_CASE("pep440 specifier ==, !=, === and local labels") {
    CHECK(in("==2.6.1", "2.6.1"));
    CHECK(in("==2.6.1", "2.6.1.0"));
    CHECK(in("==2.6.1", "2.6.1+cu118")); // the candidate's local label is ignored
    CHECK_FALSE(in("==2.6.1", "2.6.1.post118"));
    CHECK_FALSE(in("==2.6.1", "2.6.10"));
    CHECK(in("==2.6.1+cu118", "2.6.1+cu118"));
    CHECK_FALSE(in("==2.6.1+cu118", "2.6.1"));
    CHECK_FALSE(in("==2.6.1+cu118", "2.6.1+cu121"));
    CHECK(in("==2.6.*", "2.6"));
    CHECK(in("==2.6.*", "2.6.0.post1"));
    CHECK(in("==2.6.*", "2.6.3"));
    CHECK(in("==2.6.*", "2.6.3+local"));
    CHECK_FALSE(in("==2.6.*", "2.7"));
    CHECK_FALSE(in("==2.6.*", "2.60"));
    CHECK_FALSE(in("==2.6.*", "1!2.6"));
    CHECK(in("==2.6.0.*", "2.6"));
    CHECK(in("==1.0.*", "1.0rc1", true));
    CHECK(in("==1!2.*", "1!2.5"));
    CHECK(in("!=2.6.1", "2.6.2"));
    CHECK_FALSE(in("!=2.6.1", "2.6.1+cu118"));
    CHECK(in("!=2.6.1", "2.6.1.post1"));
    CHECK(in("!=2.6.1+cu118", "2.6.1+cu121"));
    CHECK_FALSE(in("!=2.6.1+cu118", "2.6.1+cu118"));
    CHECK_FALSE(in("!=2.6.*", "2.6.9"));
    CHECK(in("!=2.6.*", "2.7"));
    CHECK(in("===1.0", "1.0"));
    CHECK_FALSE(in("===1.0", "1.0.0")); // text, not version, equality
    CHECK(in("===1.0RC1", "1.0rc1", true));
    CHECK_FALSE(Specifier::parse("===foobar").contains(v("1.0")));
  }

  TEST_CASE("pep440 specifier ordering operators") {
    CHECK(in(">=1.0", "1.0"));
    CHECK(in(">=1.0", "1.0+local"));
    CHECK_FALSE(in(">=1.0", "0.9"));
    CHECK(in("<=1.0", "1.0+local"));
    CHECK_FALSE(in("<=1.0", "1.0.post1"));
    CHECK(in("<2.0", "1.9"));
    CHECK_FALSE(in("<2.0", "2.0"));
    CHECK_FALSE(in("<2.0", "2.0rc1", true)); // a pre-release of the bound is not below it
    CHECK_FALSE(in("<2.0", "2.0.dev1", true));
    CHECK(in("<2.0", "1.9rc1", true));
    CHECK(in("<2.0rc1", "2.0b1"));
    CHECK(in(">1.0", "1.1"));
    CHECK_FALSE(in(">1.0", "1.0"));
    CHECK_FALSE(in(">1.0", "1.0.post1")); // nor is a post-release of the bound above it
    CHECK_FALSE(in(">1.0", "1.0+local"));
    CHECK(in(">1.0.post1", "1.0.post2"));
    CHECK(in(">1.0", "1.0.1"));
    CHECK(in(">1.0rc1", "1.0"));
    CHECK(in("~=2.2", "2.2"));
    CHECK(in("~=2.2", "2.9"));
    CHECK(in("~=2.2", "2.2.post1"));
    CHECK_FALSE(in("~=2.2", "3.0"));
    CHECK_FALSE(in("~=2.2", "2.1"));
    CHECK(in("~=1.4.5", "1.4.5"));
    CHECK(in("~=1.4.5", "1.4.99"));
    CHECK_FALSE(in("~=1.4.5", "1.5.0"));
    CHECK_FALSE(in("~=1.4.5", "1.4.4"));
    CHECK(in("~=1.4.5a4", "1.4.5"));
    CHECK(in("~=1.4.5a4", "1.4.5b1"));
    CHECK_FALSE(in("~=1.4.5a4", "1.5"));
    CHECK(in("~=2.2.post3", "2.3"));
    CHECK_FALSE(in("~=2.2.post3", "2.2.post2"));
    CHECK(in("~=1!2.2", "1!2.5"));
    CHECK_FALSE(in("~=1!2.2", "2.5"));
    CHECK(in(">=1.0,<2", "1.5"));
    CHECK_FALSE(in(">=1.0,<2", "2.0"));
    CHECK(in(" >= 1.0 , != 1.3.* , < 2 ", "1.4"));
    CHECK_FALSE(in(" >= 1.0 , != 1.3.* , < 2 ", "1.3.1"));
  }

  TEST_CASE("pep440 pre-releases need consent or a pre-release in the specifier") {
    CHECK_FALSE(in("", "1.0rc1"));
    CHECK(in("", "1.0rc1", true));
    CHECK(in("", "1.0"));
    CHECK(in("", "1.0.post1"));
    CHECK_FALSE(in(">=1.0", "2.0b1"));
    CHECK(in(">=1.0", "2.0b1", true));
    CHECK(in(">=1.0b1", "2.0b1"));
    CHECK(in(">=1.0.dev1", "2.0.dev3"));
    CHECK(in("==2.0.0rc1", "2.0.0rc1"));
    CHECK_FALSE(in("!=1.0b1", "1.0b2"));        // != does not name one
    CHECK(in(">=1.0,<=2.0rc1", "2.0b1"));       // one clause naming a pre-release is enough
    CHECK_FALSE(in(">=1.0", "1.5.post1.dev1")); // a dev release is a pre-release
    CHECK(Specifier::parse(">=1.0a1").names_prerelease());
    CHECK(Specifier::parse("==1.0rc1").names_prerelease());
    CHECK_FALSE(Specifier::parse("==1.0.*").names_prerelease());
    CHECK_FALSE(Specifier::parse("!=1.0a1").names_prerelease());
    CHECK_FALSE(Specifier::parse(">=1.0").names_prerelease());
    // Specifier::contains is the operator alone.
    CHECK(Specifier::parse(">=1.0").contains(v("2.0b1")));
  }

  TEST_CASE("pep440 Requires-Python strings") {
    CHECK(in(">=3.8", "3.11"));
    CHECK(in(">=3.8", "3.11.4"));
    CHECK_FALSE(in(">=3.8", "3.7.17"));
    CHECK(in(">=3.7, !=3.10.*", "3.11"));
    CHECK_FALSE(in(">=3.7, !=3.10.*", "3.10"));
    CHECK_FALSE(in(">=3.7, !=3.10.*", "3.10.12"));
    CHECK(in(">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*, <4", "3.11.4"));
    CHECK_FALSE(in(">=3.12", "3.11.9"));
    CHECK(in("~=3.9", "3.11"));
    CHECK(in(">=3.8,", "3.11")); // a trailing comma is skipped, as pip does
  }

  TEST_CASE("pep440 specifier parsing and errors") {
    auto set = SpecifierSet::parse(">=1.0, <2,!=1.5.*");
    REQUIRE(set.items.size() == 3);
    CHECK(set.items[0].op == ">=");
    CHECK(set.items[0].version == "1.0");
    CHECK(set.items[1].op == "<");
    CHECK(set.items[2].op == "!=");
    CHECK(set.items[2].version == "1.5.*");
    CHECK(set.str() == ">=1.0,<2,!=1.5.*");
    CHECK_FALSE(set.empty());
    CHECK(SpecifierSet::parse("").empty());
    CHECK(SpecifierSet::parse("  ").empty());
    CHECK(Specifier::parse("~= 1.4.2").str() == "~=1.4.2");
    CHECK(Specifier::parse("===foo-bar").version == "foo-bar");

    CHECK(contains(invalid([] { SpecifierSet::parse(">=1.0,1.5"); }), "'1.5'"));
    CHECK(contains(invalid([] { SpecifierSet::parse("1.5"); }), "expected an operator"));
    CHECK(contains(invalid([] { SpecifierSet::parse(">=1.0,<=x"); }), "'x' is not a PEP 440 version"));
    CHECK(contains(invalid([] { SpecifierSet::parse(">=1.*"); }), "only allowed with == and !="));
    CHECK(contains(invalid([] { SpecifierSet::parse("~=1"); }), "at least two release numbers"));
    CHECK(contains(invalid([] { SpecifierSet::parse(">=1.0+local"); }), "local version label"));
    CHECK(contains(invalid([] { SpecifierSet::parse("~=1.0+local"); }), "local version label"));
    CHECK(contains(invalid([] { SpecifierSet::parse("==1.0+local.*"); }), "'.*' must follow"));
    CHECK(contains(invalid([] { SpecifierSet::parse("==1.0a1.*"); }), "'.*' must follow"));
    CHECK(contains(invalid([] { SpecifierSet::parse("=="); }), "no version"));
    CHECK(contains(invalid([] { SpecifierSet::parse("== 1.0 2"); }), "spaces"));
    CHECK(contains(invalid([] { SpecifierSet::parse("=1.0"); }), "expected an operator"));
    CHECK(contains(invalid([] { Specifier{">=", "x"}.contains(v("1.0")); }), "not a PEP 440 version"));
  }

  TEST_CASE("marker evaluation: operators, precedence, quoting") {
    CHECK(eval("python_version >= \"3.8\""));
    CHECK(eval("python_version >= '3.8'"));
    CHECK(eval("python_version>'3.9'")); // 3.11 > 3.9 as versions, not as strings
    CHECK_FALSE(eval("python_version < \"3.10\""));
    CHECK(eval("python_full_version < \"3.11.5\""));
    CHECK_FALSE(eval("python_full_version < \"3.11.2\""));
    CHECK(eval("python_version == \"3.11.*\""));
    CHECK(eval("python_version ~= \"3.8\""));
    CHECK(eval("python_version != '3.10'"));
    CHECK(eval("'3.8' <= python_version")); // variable on the right
    CHECK_FALSE(eval("'3.12' <= python_version"));
    CHECK(eval("os_name == 'posix'"));
    CHECK(eval("sys_platform == 'linux'"));
    CHECK_FALSE(eval("sys_platform == 'win32'"));
    CHECK(eval("platform_system == 'Linux' and platform_machine == 'x86_64'"));
    CHECK(eval("platform_python_implementation == 'CPython'"));
    CHECK(eval("implementation_name == 'cpython' and implementation_version >= '3.11'"));
    CHECK(eval("os.name == 'posix' and sys.platform == 'linux'")); // legacy spellings
    CHECK(eval("'linux' in sys_platform"));
    CHECK(eval("'lin' in sys_platform"));
    CHECK(eval("'win' not in sys_platform"));
    CHECK(eval("platform_machine in 'x86_64 aarch64'"));
    CHECK(eval("os_name > 'nt'"));                     // strings compare as strings
    CHECK_FALSE(eval("platform_machine < 'aarch64'")); // "x86_64" > "aarch64"
    CHECK(eval("platform_release == ''"));             // unknown kernel
    // and binds tighter than or.
    CHECK(eval("sys_platform == 'win32' and os_name == 'nt' or python_version >= '3.8'"));
    CHECK(eval("python_version >= '3.8' or sys_platform == 'win32' and os_name == 'nt'"));
    CHECK_FALSE(eval("sys_platform == 'win32' and (os_name == 'nt' or python_version >= '3.8')"));
    CHECK(eval("(sys_platform == 'win32' or os_name == 'posix') and python_version >= '3.8'"));
    CHECK(eval("((python_version >= '3.8'))"));
    CHECK_FALSE(eval("python_version >= '3.8' and python_version < '3.11'"));

    auto older = python::marker_environment(target(7), "3.7.17");
    CHECK(Marker::parse("python_version < '3.8'").evaluate(older));
    auto rc = python::marker_environment(target(13), "3.13.0rc1");
    CHECK(Marker::parse("python_full_version >= '3.8'").evaluate(rc)); // pre-releases count
    CHECK_FALSE(Marker::parse("python_full_version >= '3.13'").evaluate(rc));

    CHECK(contains(invalid([] { eval("python_version ~= 'posix'"); }), "undefined"));
    std::map<std::string, std::string> partial = {{"python_version", "3.11"}};
    CHECK(contains(invalid([&] { Marker::parse("os_name == 'posix'").evaluate(partial); }), "'os_name'"));
  }

  TEST_CASE("marker extras") {
    CHECK_FALSE(eval("extra == 'socks'"));
    CHECK(eval("extra == 'socks'", {"socks"}));
    CHECK(eval("extra == 'Socks_Proxy'", {"socks-proxy"})); // names normalised
    CHECK(eval("'socks' == extra", {"http", "socks"}));
    CHECK_FALSE(eval("extra == 'socks'", {"http"}));
    CHECK(eval("extra != 'socks'"));
    CHECK_FALSE(eval("extra != 'socks'", {"socks", "http"}));
    CHECK(eval("extra == 'a' and extra == 'b'", {"a", "b"}));
    CHECK(eval("python_version >= '3.8' and extra == 'test'", {"test"}));
    CHECK_FALSE(eval("python_version < '3.8' and extra == 'test'", {"test"}));
    CHECK(eval("python_version < '3.8' or extra == 'test'", {"test"}));
  }

  TEST_CASE("marker parsing errors and str()") {
    CHECK(Marker::parse("python_version>='3.8'and(os_name=='posix'or extra=='x')").str() ==
          "python_version >= \"3.8\" and (os_name == \"posix\" or extra == \"x\")");
    CHECK(Marker::parse("os.name == 'posix' or sys_platform != \"linux\"").str() ==
          "os_name == \"posix\" or sys_platform != \"linux\"");
    CHECK(Marker::parse("'a\"b' not in platform_version").str() == "'a\"b' not in platform_version");
    CHECK(Marker::parse("(python_version in '3.11' or os_name == 'nt') and extra == 'x'").str() ==
          "(python_version in \"3.11\" or os_name == \"nt\") and extra == \"x\"");

    auto column = [](const std::string& text) { return invalid([&] { Marker::parse(text); }); };
    CHECK(contains(column(""), "expected a marker variable or a quoted string, found the end at column 1"));
    CHECK(contains(column("python_version >= '3.8' and"), "at column 28"));
    CHECK(contains(column("python_version"), "expected a comparison operator"));
    CHECK(contains(column("python_version = '3.8'"), "at column 16"));
    CHECK(contains(column("pyton_version >= '3.8'"), "unknown marker variable 'pyton_version' at column 1"));
    CHECK(contains(column("python_version >= '3.8"), "unterminated string at column 19"));
    CHECK(contains(column("(python_version >= '3.8'"), "expected ')'"));
    CHECK(contains(column("python_version >= '3.8')"), "at column 24"));
    CHECK(contains(column("python_version >= '3.8' xor os_name == 'posix'"), "expected 'and', 'or'"));
    CHECK(contains(column("python_version not '3.8'"), "not in) at column 16"));
    CHECK(contains(column("python_version >= 3.8"), "at column 19"));
    CHECK(contains(column("os_name == 'posix' andos_name == 'x'"), "at column 20"));
  }

  TEST_CASE("requirement parsing") {
    auto plain = Requirement::parse("requests");
    CHECK(plain.name == "requests");
    CHECK(plain.key == "requests");
    CHECK(plain.extras.empty());
    CHECK(plain.specifier.empty());
    CHECK(plain.url.empty());
    CHECK_FALSE(plain.marker.has_value());

    auto full = Requirement::parse("Requests[Socks, security_Extra] >=2.31,<3 ; python_version >= '3.8'");
    CHECK(full.name == "Requests");
    CHECK(full.key == "requests");
    CHECK(full.extras == std::set<std::string>{"socks", "security-extra"});
    CHECK(full.specifier.str() == ">=2.31,<3");
    REQUIRE(full.marker.has_value());
    CHECK(full.marker->evaluate(env311()));
    CHECK(full.str() == "Requests[security-extra,socks]>=2.31,<3; python_version >= \"3.8\"");

    auto parens = Requirement::parse("zope.interface (>=5.0, !=5.1.*)");
    CHECK(parens.name == "zope.interface");
    CHECK(parens.key == "zope-interface");
    CHECK(parens.specifier.items.size() == 2);
    CHECK(parens.specifier.contains(v("5.2")));
    CHECK_FALSE(parens.specifier.contains(v("5.1.3")));

    auto tight = Requirement::parse("torch==2.6.1+cu118;platform_machine=='x86_64'");
    CHECK(tight.name == "torch");
    CHECK(tight.specifier.str() == "==2.6.1+cu118");
    REQUIRE(tight.marker.has_value());
    CHECK(tight.marker->str() == "platform_machine == \"x86_64\"");

    auto url =
        Requirement::parse("pip @ https://example.com/pip-23.0-py3-none-any.whl#sha256=ab;c ; os_name == 'posix'");
    CHECK(url.name == "pip");
    CHECK(url.url == "https://example.com/pip-23.0-py3-none-any.whl#sha256=ab;c");
    CHECK(url.specifier.empty());
    REQUIRE(url.marker.has_value());
    CHECK(url.str() == "pip @ https://example.com/pip-23.0-py3-none-any.whl#sha256=ab;c ; os_name == \"posix\"");
    CHECK(Requirement::parse(url.str()).url == url.url);

    auto extras_only = Requirement::parse("  black[d]  ");
    CHECK(extras_only.extras == std::set<std::string>{"d"});
    CHECK(Requirement::parse("black[]").extras.empty());
    CHECK(Requirement::parse("name ; extra == 'test'").marker->evaluate(env311(), {"test"}));
    CHECK(Requirement::parse("name[x] @ file:///tmp/x.whl").extras == std::set<std::string>{"x"});
    CHECK(Requirement::parse("a-b_c.d===1.0foo").specifier.str() == "===1.0foo");
    // A ';' with no space before it belongs to the URL.
    auto semicolon = Requirement::parse("name @ http://x;os_name=='posix'");
    CHECK(semicolon.url == "http://x;os_name=='posix'");
    CHECK_FALSE(semicolon.marker.has_value());
  }

  TEST_CASE("requirement parsing errors name the problem and its column") {
    auto err = [](const std::string& text) { return invalid([&] { Requirement::parse(text); }); };
    CHECK(contains(err(""), "expected a project name at column 1"));
    CHECK(contains(err(">=1.0"), "expected a project name at column 1"));
    CHECK(contains(err("-name"), "must start and end with a letter or digit"));
    CHECK(contains(err("name-"), "must start and end with a letter or digit"));
    CHECK(contains(err("name[extra"), "expected ',' or ']' in the extras at column 11"));
    CHECK(contains(err("name[a,]"), "expected an extra name at column 8"));
    CHECK(contains(err("name >= 1.0 garbage"), "spaces"));
    CHECK(contains(err("name >=x"), "invalid requirement 'name >=x': invalid version specifier '>=x'"));
    CHECK(contains(err("name >=x"), "at column 6"));
    CHECK(contains(err("name (>=1.0"), "expected ')' to close the '(' at column 6"));
    CHECK(contains(err("name (>=1.0) extra"), "at column 14"));
    CHECK(contains(err("name @"), "expected a URL after '@'"));
    CHECK(contains(err("name @ http://x extra"), "after the URL at column 17"));
    CHECK(contains(err("name ; "), "expected a marker variable or a quoted string, found the end at column 8"));
    CHECK(contains(err("name ; os_name = 'x'"), "expected a comparison operator"));
    CHECK(contains(err("name ; os_name = 'x'"), "at column 16"));
    CHECK(contains(err("name 1.0"), "expected a version specifier"));
  }

  TEST_CASE("marker_environment describes a CPython target on Linux") {
    auto env = python::marker_environment(target(11, std::pair{2, 36}, "aarch64"), "3.11.4");
    CHECK(env.at("python_version") == "3.11");
    CHECK(env.at("python_full_version") == "3.11.4");
    CHECK(env.at("os_name") == "posix");
    CHECK(env.at("sys_platform") == "linux");
    CHECK(env.at("platform_system") == "Linux");
    CHECK(env.at("platform_machine") == "aarch64");
    CHECK(env.at("platform_python_implementation") == "CPython");
    CHECK(env.at("implementation_name") == "cpython");
    CHECK(env.at("implementation_version") == "3.11.4");
    CHECK(env.at("platform_release").empty());
    CHECK(env.count("extra") == 0);
  }

  TEST_CASE("supported tags in pip's order (cp311, glibc 2.36, x86_64)") {
    auto tags = python::supported_tags(target());
    // 36 platforms (manylinux_2_36..2_5 with three aliases, linux_x86_64); per platform
    // cp311-cp311, cp311-abi3, cp311-none, cp310..cp32-abi3, py311, py3, py310..py30;
    // then 14 "any" tags.
    REQUIRE(tags.size() == 36 * (3 + 9 + 13) + 14);
    CHECK(tags[0] == "cp311-cp311-manylinux_2_36_x86_64");
    CHECK(tags[1] == "cp311-cp311-manylinux_2_35_x86_64");
    CHECK(tags[19] == "cp311-cp311-manylinux_2_17_x86_64");
    CHECK(tags[20] == "cp311-cp311-manylinux2014_x86_64");
    CHECK(tags[21] == "cp311-cp311-manylinux_2_16_x86_64");
    CHECK(index_of(tags, "cp311-cp311-manylinux_2_12_x86_64") == 25);
    CHECK(tags[26] == "cp311-cp311-manylinux2010_x86_64");
    CHECK(tags[33] == "cp311-cp311-manylinux_2_5_x86_64");
    CHECK(tags[34] == "cp311-cp311-manylinux1_x86_64");
    CHECK(tags[35] == "cp311-cp311-linux_x86_64");
    CHECK(tags[36] == "cp311-abi3-manylinux_2_36_x86_64");
    CHECK(index_of(tags, "cp311-abi3-manylinux2014_x86_64") == 56);
    CHECK(tags[72] == "cp311-none-manylinux_2_36_x86_64");
    CHECK(tags[108] == "cp310-abi3-manylinux_2_36_x86_64");
    CHECK(index_of(tags, "cp38-abi3-manylinux2014_x86_64") == 108 + 2 * 36 + 20);
    CHECK(tags[431] == "cp32-abi3-linux_x86_64");
    CHECK(tags[432] == "py311-none-manylinux_2_36_x86_64");
    CHECK(tags[468] == "py3-none-manylinux_2_36_x86_64");
    CHECK(tags[899] == "py30-none-linux_x86_64");
    CHECK(tags[900] == "cp311-none-any");
    CHECK(tags[901] == "py311-none-any");
    CHECK(tags[902] == "py3-none-any");
    CHECK(tags[903] == "py310-none-any");
    CHECK(tags.back() == "py30-none-any");
    CHECK(std::none_of(tags.begin(), tags.end(), [](const std::string& t) { return contains(t, "musllinux"); }));
    CHECK(std::none_of(tags.begin(), tags.end(), [](const std::string& t) { return contains(t, "cp312"); }));
    CHECK(std::set<std::string>(tags.begin(), tags.end()).size() == tags.size());
  }

  TEST_CASE("supported tags: platforms per architecture, glibc and Python version") {
    auto arm = python::platform_tags(target(11, std::pair{2, 36}, "aarch64"));
    REQUIRE(arm.size() == 20 + 1 + 1); // manylinux_2_36..2_17, manylinux2014, linux
    CHECK(arm.front() == "manylinux_2_36_aarch64");
    CHECK(arm[20] == "manylinux2014_aarch64");
    CHECK(arm.back() == "linux_aarch64");

    // Unknown glibc counts as 2.17.
    auto unknown = python::platform_tags(target(11, std::nullopt));
    CHECK(unknown.front() == "manylinux_2_17_x86_64");
    CHECK(unknown[1] == "manylinux2014_x86_64");
    CHECK(unknown.back() == "linux_x86_64");

    auto old = python::platform_tags(target(11, std::pair{2, 12}));
    CHECK(old.front() == "manylinux_2_12_x86_64");
    CHECK(old[1] == "manylinux2010_x86_64");

    auto armv8l = python::platform_tags(target(11, std::pair{2, 31}, "armv8l"));
    CHECK(armv8l.front() == "manylinux_2_31_armv8l");
    CHECK(index_of(armv8l, "manylinux_2_31_armv7l") == 16);
    CHECK(armv8l[armv8l.size() - 2] == "linux_armv8l");
    CHECK(armv8l.back() == "linux_armv7l");

    CHECK(python::platform_tags(target(11, std::pair{2, 36}, "sparc64")) == std::vector<std::string>{"linux_sparc64"});

    auto py37 = python::supported_tags(target(7));
    CHECK(py37.front() == "cp37-cp37m-manylinux_2_36_x86_64");
    CHECK(py37[36] == "cp37-abi3-manylinux_2_36_x86_64");
    CHECK(py37.back() == "py30-none-any");
  }

  TEST_CASE("tag_rank picks the best tag of a compressed tag set") {
    auto t = target();
    auto tags = python::supported_tags(t);
    CHECK(rank("numpy-1.26.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", t) == 19);
    CHECK(rank("x-1.0-cp311-cp311-manylinux2014_x86_64.whl", t) == 20);
    CHECK(rank("x-1.0-cp311-cp311-linux_x86_64.whl", t) == 35);
    CHECK(rank("x-1.0-cp38-abi3-manylinux_2_17_x86_64.whl", t) == 108 + 2 * 36 + 19);
    CHECK(rank("six-1.16.0-py2.py3-none-any.whl", t) == 902);
    CHECK(rank("x-1.0-PY3-NONE-ANY.whl", t) == 902);
    CHECK(rank("x-1.0-py310-none-any.whl", t) == 903);
    CHECK(rank("x-1.0-cp311-none-any.whl", t) == 900);
    CHECK(rank("x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", t) <
          rank("x-1.0-cp311-abi3-manylinux_2_28_x86_64.whl", t));
    CHECK(rank("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", t) <
          rank("x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", t));

    for (const std::string none :
         {"x-1.0-cp312-cp312-manylinux_2_17_x86_64.whl", "x-1.0-cp311-cp311-manylinux_2_37_x86_64.whl",
          "x-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", "x-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
          "x-1.0-py2-none-any.whl", "x-1.0-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl",
          "x-1.0-cp312-abi3-manylinux_2_17_x86_64.whl"}) {
      CAPTURE(none);
      CHECK_FALSE(rank(none, t).has_value());
    }
  }

  TEST_CASE("tag_rank agrees with incompatibility()") {
    // Wheels incompatibility() accepts get a rank and the ones it refuses none, apart
    // from the documented exceptions below.
    struct Case {
      std::string file;
      python::PythonTarget target;
    };
    std::vector<Case> cases = {
        {"x-1.0-py3-none-any.whl", target()},
        {"x-1.0-py2.py3-none-any.whl", target()},
        {"x-1.0-py310-none-any.whl", target()},
        {"x-1.0-py312-none-any.whl", target()},
        {"x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", target()},
        {"x-1.0-cp311-cp311-manylinux2010_x86_64.whl", target(11, std::pair{2, 12})},
        {"x-1.0-cp311-cp311-manylinux2014_x86_64.whl", target(11, std::pair{2, 12})},
        {"x-1.0-cp311-cp311-manylinux1_x86_64.whl", target()},
        {"x-1.0-cp311-cp311-linux_x86_64.whl", target(11, std::nullopt)},
        {"x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", target(11, std::nullopt)},
        {"x-1.0-cp38-abi3-manylinux_2_17_x86_64.whl", target()},
        {"x-1.0-cp312-abi3-manylinux_2_17_x86_64.whl", target()},
        {"x-1.0-cp310-cp310-manylinux_2_17_x86_64.whl", target()},
        {"x-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", target()},
        {"x-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", target()},
        {"x-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", target(11, std::pair{2, 36}, "aarch64")},
        {"x-1.0-cp27-cp27mu-manylinux1_x86_64.whl", target()},
        {"x-1.0-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl", target()},
        {"x-1.0-py3-none-linux_x86_64.whl", target()},
        {"x-1.0-cp37-cp37m-manylinux1_x86_64.whl", target(7)},
    };
    for (const auto& c : cases) {
      CAPTURE(c.file);
      CAPTURE(c.target.describe());
      bool accepted = !python::incompatibility(WheelName::parse(c.file), c.target).has_value();
      CHECK(rank(c.file, c.target).has_value() == accepted);
    }
    // The exceptions: incompatibility() does not check manylinux when glibc is unknown,
    // tag_rank assumes 2.17; and ABI / interpreter combinations pip never installs.
    CHECK_FALSE(python::incompatibility(WheelName::parse("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
                                        target(11, std::nullopt)));
    CHECK_FALSE(rank("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", target(11, std::nullopt)).has_value());
    for (const std::string file : {"x-1.0-cp311-cp311d-linux_x86_64.whl", "x-1.0-cp310-none-any.whl"}) {
      CAPTURE(file);
      CHECK_FALSE(python::incompatibility(WheelName::parse(file), target()));
      CHECK_FALSE(rank(file, target()).has_value());
    }
  }
}
