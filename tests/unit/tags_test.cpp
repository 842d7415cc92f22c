// Wheel tags a target supports, in pip's order, and the rank of a wheel's tags
// (python/tags.hpp).
#include <doctest/doctest.h>

#include "tests/unit/python_support.hpp"
#include "tests/unit/support.hpp"

#include "python/tags.hpp"
#include "python/wheel.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace unit_tags_test {

using python::WheelName;
using test_support::contains;
using test_support::target;

namespace {

std::size_t index_of(const std::vector<std::string>& tags, const std::string& tag) {
  auto it = std::find(tags.begin(), tags.end(), tag);
  REQUIRE_MESSAGE(it != tags.end(), tag);
  return static_cast<std::size_t>(it - tags.begin());
}

std::optional<std::size_t> rank(const std::string& filename, const python::PythonTarget& t) {
  return python::tag_rank(WheelName::parse(filename), python::supported_tags(t));
}

} // namespace

TEST_SUITE("tags") {
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

} // namespace unit_tags_test
