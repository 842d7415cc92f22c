#pragma once
// Helpers shared by the unit tests.
#include "util/error.hpp"
#include "util/fs.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <string>

namespace test_support {

// Runs f, which must throw util::Error, and returns the error for inspection.
template <typename F> util::Error error_of(F&& f) {
  try {
    f();
  } catch (const util::Error& e) {
    return e;
  }
  FAIL("expected a util::Error");
  return util::Error(util::ErrorKind::internal, "unreachable");
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A fresh directory under the system temp dir, removed at scope exit.
inline util::TempDir make_temp(const char* prefix) {
  return util::TempDir(std::filesystem::temp_directory_path(), prefix);
}

} // namespace test_support
