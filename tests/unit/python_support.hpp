#pragma once
// Helpers the unit tests of python/ share: versions that must parse, the message of an
// std::invalid_argument, a CPython target.
#include <doctest/doctest.h>

#include "python/pep440.hpp"
#include "python/requirement.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace test_support {

inline python::pep440::Version v(const std::string& text) {
  auto parsed = python::pep440::Version::parse(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
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

inline python::PythonTarget target(int minor = 11, std::optional<std::pair<int, int>> glibc = std::pair{2, 36},
                                   std::string arch = "x86_64") {
  python::PythonTarget t;
  t.major = 3;
  t.minor = minor;
  t.arch = std::move(arch);
  t.glibc = glibc;
  return t;
}

} // namespace test_support
