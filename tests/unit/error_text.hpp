#pragma once
// The message and hint of the util::Error a call throws ("what | hint"), "" when it
// throws none: for tests that check both what an error says and the fix it suggests.
#include "util/error.hpp"

#include <functional>
#include <string>

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const util::Error& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "";
}
