// PEP 440 versions and specifiers (python/pep440.hpp).
#include <doctest/doctest.h>

#include "tests/unit/python_support.hpp"
#include "tests/unit/support.hpp"

#include "python/pep440.hpp"

#include <string>

namespace unit_pep440_test {

using python::pep440::Specifier;
using python::pep440::SpecifierSet;
using python::pep440::Version;
using test_support::contains;
using test_support::invalid;
using test_support::v;

namespace {

std::string norm(const std::string& text) {
  return v(text).str();
}

bool in(const std::string& specifiers, const std::string& version, bool prereleases = false) {
  return SpecifierSet::parse(specifiers).contains(v(version), prereleases);
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
}

} // namespace unit_pep440_test
