// PEP 508 requirements and markers, and the marker environment of a target
// (python/requirement.hpp).
#include <doctest/doctest.h>

#include "tests/unit/python_support.hpp"
#include "tests/unit/support.hpp"

#include "python/requirement.hpp"

#include <map>
#include <set>
#include <string>

namespace unit_requirement_test {

using python::Marker;
using python::Requirement;
using test_support::contains;
using test_support::invalid;
using test_support::target;
using test_support::v;

namespace {

std::map<std::string, std::string> env311() {
  return python::marker_environment(target(), "3.11.4");
}

bool eval(const std::string& marker, const std::set<std::string>& extras = {}) {
  return Marker::parse(marker).evaluate(env311(), extras);
}

} // namespace

TEST_SUITE("requirement") {
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

  TEST_CASE("a marker nesting parentheses thousands deep is refused, not a stack overflow (found by fuzz_python)") {
    // The minimised crash: a Requires-Dist a hostile wheel could carry.
    std::string deep = "x ; " + std::string(100000, '(') + "os_name == 'posix'" + std::string(100000, ')');
    CHECK(contains(invalid([&] { Requirement::parse(deep); }), "parentheses nested more than 32 deep"));
    std::string ok = std::string(32, '(') + "os_name == 'posix'" + std::string(32, ')');
    CHECK(Marker::parse(ok).evaluate(python::marker_environment(target(), "3.11.4")));
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
}

} // namespace unit_requirement_test
