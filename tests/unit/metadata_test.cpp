#include <doctest/doctest.h>

#include "python/metadata.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace unit_metadata_test {

TEST_SUITE("metadata") {
  TEST_CASE("METADATA: first Name and Version win, folded lines join, keys any case, the body is not read") {
    auto m = python::parse_metadata("Metadata-Version: 2.1\r\nname:  Zope.Interface \r\nVersion: 6.0\r\n"
                                    "Name: other\r\nRequires-Python: >=3.8\r\nRequires-Dist: numpy\r\n"
                                    "  >=1.21\r\nrequires-dist: protobuf ; extra == \"pb\"\r\n"
                                    "Provides-Extra: pb\r\nClassifier: x\r\n\r\nVersion: 9\r\nRequires-Dist: body\r\n");
    CHECK(m.name == "Zope.Interface");
    CHECK(m.version == "6.0");
    REQUIRE(m.requires_python);
    CHECK(*m.requires_python == ">=3.8");
    CHECK(m.requires_dist == std::vector<std::string>{"numpy >=1.21", "protobuf ; extra == \"pb\""});
    CHECK(m.provides_extra == std::vector<std::string>{"pb"});
    auto none = python::parse_metadata("\nName: a\nVersion: 1\n");
    CHECK(none.name.empty());
    CHECK(python::parse_metadata("Name: nover").version.empty());
    CHECK(python::parse_metadata(": no key\n  folded into nothing\nName: x\n").name == "x");
  }

  TEST_CASE("RECORD: quoted paths with commas and quotes, missing fields, CRLF") {
    auto r = python::parse_record("pkg/__init__.py,sha256=abc,12\r\n\"odd,name.py\",sha256=def,3\n"
                                  "\"say \"\"hi\"\".txt\",,\n\npkg-1.0.dist-info/RECORD,,\nbare\n");
    REQUIRE(r.size() == 5);
    CHECK(r[0] == python::RecordEntry{"pkg/__init__.py", "sha256=abc", "12"});
    CHECK(r[1] == python::RecordEntry{"odd,name.py", "sha256=def", "3"});
    CHECK(r[2].path == "say \"hi\".txt");
    CHECK(r[2].hash.empty());
    CHECK(r[3].path == "pkg-1.0.dist-info/RECORD");
    CHECK(r[4] == python::RecordEntry{"bare", "", ""});
  }

  TEST_CASE("WHEEL: Wheel-Version MAJOR.MINOR required, Root-Is-Purelib read") {
    auto w =
        python::parse_wheel_file("Wheel-Version: 1.0\r\nGenerator: bdist_wheel (0.40.0)\r\nRoot-Is-Purelib: True\r\n"
                                 "Tag: py3-none-any\r\n");
    CHECK(w.major == 1);
    CHECK(w.minor == 0);
    CHECK(w.root_is_purelib);
    CHECK(python::parse_wheel_file("wheel-version:  2.13 \nRoot-Is-Purelib: false\n").major == 2);
    CHECK_FALSE(python::parse_wheel_file("Wheel-Version: 1.0\n").root_is_purelib);
    CHECK_THROWS_WITH_AS(python::parse_wheel_file("Generator: x\n"), "it has no Wheel-Version", std::invalid_argument);
    for (const char* bad : {"1", "1.", ".1", "a.b", "1.0.0", "99999.0", "-1.0", "1.+1"}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(python::parse_wheel_file(std::string("Wheel-Version: ") + bad + "\n"), std::invalid_argument);
    }
    // Headers end at the first empty line, as in METADATA.
    CHECK_THROWS_AS(python::parse_wheel_file("Generator: x\n\nWheel-Version: 1.0\n"), std::invalid_argument);
  }

  TEST_CASE("names as PEP 503 and packaging normalise them; versions as PEP 440 compares them") {
    CHECK(python::normalize_project_name("Foo__Bar.-baz") == "foo-bar-baz");
    CHECK(python::normalize_project_name("typing_extensions") == "typing-extensions");
    CHECK(python::normalize_project_name("opt_einsum") == python::normalize_project_name("opt-einsum"));
    CHECK(python::normalize_project_name("_leading.") == "-leading-"); // as re.sub(r"[-_.]+", "-") does
    CHECK(python::normalize_version("1.0") == python::normalize_version("1.0.0"));
    CHECK(python::normalize_version("v1.00.0") == "1");
    CHECK(python::normalize_version("1.0-RC1") == "1rc1");
    CHECK(python::normalize_version("1.0-1") == python::normalize_version("1.0.post1"));
    CHECK(python::normalize_version("1!2.0.dev3") == "1!2.dev3");
    CHECK(python::normalize_version("2.6.1+CU118") == "2.6.1+cu118");
    CHECK(python::normalize_version("1.0+local_1") == python::normalize_version("1.0.0+local.1"));
    CHECK(python::normalize_version(" Not.A-Version ") == "not.a-version");
    CHECK(python::normalize_version("1.0") != python::normalize_version("1.0.1"));
  }
}

} // namespace unit_metadata_test
