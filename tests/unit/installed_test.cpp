// The installed-distribution view of an image's file tree (python/installed.hpp): what
// pip would list, read from the files a layers::BaseView keeps.
#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "python/installed.hpp"
#include "tests/unit/view_support.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace unit_installed_test {

namespace {

const std::string k_site = "usr/local/lib/python3.10/dist-packages/";

} // namespace

TEST_SUITE("installed") {
  TEST_CASE("installed_distributions: pip's, Debian's and egg-info distributions; what is not one is skipped") {
    auto view = test_support::view_of(
        {{
             {k_site + "opt_einsum-3.3.0.dist-info/METADATA",
              "Metadata-Version: 2.1\nName: opt-einsum\nVersion: 3.3.0\nRequires-Dist: numpy>=1.7\n\nbody\n"},
             {k_site + "opt_einsum-3.3.0.dist-info/INSTALLER", "pip\n"},
             {k_site + "opt_einsum-3.3.0.dist-info/RECORD",
              "opt_einsum/__init__.py,sha256=x,10\n../../../bin/opt,sha256=y,5\n"
              "opt_einsum-3.3.0.dist-info/RECORD,,\n"},
             {"usr/lib/python3/dist-packages/six-1.16.0.egg-info",
              "Metadata-Version: 1.1\nName: six\nVersion: 1.16.0\n"},
             {"usr/lib/python3/dist-packages/yaml-6.0.dist-info/METADATA", "Name: PyYAML\nVersion: 6.0\n"},
             {"usr/lib/python3/dist-packages/yaml-6.0.dist-info/INSTALLER", "debian\r\n"},
             // Not distributions: no Version; not under a packages directory.
             {k_site + "broken-1.0.dist-info/METADATA", "Name: broken\n"},
             {"opt/app/vendored-1.0.dist-info/METADATA", "Name: vendored\nVersion: 1.0\n"},
         },
         {
             {k_site + "protobuf-3.20.2.dist-info/METADATA", "Name: protobuf\nVersion: 3.20.2\n"},
         }});

    auto dists = python::installed_distributions(view);
    REQUIRE(dists.size() == 4);
    // Sorted by location.
    CHECK(dists[0].name == "six");
    CHECK(dists[0].location == "usr/lib/python3/dist-packages/six-1.16.0.egg-info");
    CHECK_FALSE(dists[0].has_record);
    CHECK(dists[1].name == "PyYAML");
    CHECK(dists[1].installer == "debian");
    CHECK_FALSE(dists[1].has_record);
    const auto& oe = dists[2];
    CHECK(oe.name == "opt-einsum");
    CHECK(oe.version == "3.3.0");
    CHECK(oe.installer == "pip");
    CHECK(oe.has_record);
    CHECK(oe.requires_dist == std::vector<std::string>{"numpy>=1.7"});
    CHECK(oe.files ==
          std::vector<std::string>{"opt_einsum/__init__.py", "../../../bin/opt", "opt_einsum-3.3.0.dist-info/RECORD"});
    CHECK(oe.layer == "sha256:" + std::string(64, '1'));
    CHECK(dists[3].name == "protobuf");
    CHECK(dists[3].layer == "sha256:" + std::string(64, '2'));

    CHECK(python::purl(oe) == "pkg:pypi/opt-einsum@3.3.0");
    CHECK(python::purl(dists[1]) == "pkg:pypi/pyyaml@6.0");

    auto j = python::to_json(dists);
    REQUIRE(j.size() == 4);
    CHECK(j[2]["name"] == "opt-einsum");
    CHECK(j[2]["installer"] == "pip");
    CHECK(j[2]["files"].size() == 3);
    CHECK(j[2]["requires_dist"][0] == "numpy>=1.7");
    CHECK(j[3]["layer"] == "sha256:" + std::string(64, '2'));
  }

  TEST_CASE("installed_distributions: a whiteout in an upper layer removes a distribution") {
    auto view = test_support::view_of(
        {{{k_site + "a-1.0.dist-info/METADATA", "Name: a\nVersion: 1.0\n"},
          {k_site + "b-1.0.dist-info/METADATA", "Name: b\nVersion: 1.0\n"}},
         {{k_site + ".wh.a-1.0.dist-info", ""}, {k_site + "a-2.0.dist-info/METADATA", "Name: a\nVersion: 2.0\n"}}});
    auto dists = python::installed_distributions(view);
    REQUIRE(dists.size() == 2);
    CHECK(dists[0].name == "a");
    CHECK(dists[0].version == "2.0");
    CHECK(dists[1].name == "b");
  }
}

} // namespace unit_installed_test
