#pragma once
// What every libFuzzer target here shares. A parser answers bad input with a refusal:
// util::Error (the message the user sees, naming the file and field) or, in python/,
// std::invalid_argument (its callers add the file). Any other exception escaping a
// parser (nlohmann::json's type_error, std::out_of_range, a std::invalid_argument
// from std::stoi outside python/, ...) reaches the user as a
// message that names nothing, so a target lets it through and libFuzzer reports it as
// a crash, as it does a sanitizer report, a leak or a timeout.
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>

namespace fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs fn; a refusal (util::Error) is a fine answer, anything else propagates.
template <typename Fn> void refusal_ok(Fn&& fn) {
  try {
    fn();
  } catch (const util::Error&) {
  }
}
// The same for the parsers whose contract is std::invalid_argument (python/'s, the
// token answer): their callers word it.
template <typename Fn> void refusal_or_invalid_argument_ok(Fn&& fn) {
  try {
    fn();
  } catch (const util::Error&) {
  } catch (const std::invalid_argument&) {
  }
}

// For parsers that read a file: one scratch directory per process (under TMPDIR), and
// the input written to NAME (a path relative to it) in it, whole, each time.
inline const std::filesystem::path& scratch() {
  // Never destroyed: the exit handler below runs after function-local statics are gone.
  static const std::filesystem::path& dir = *[] {
    const char* t = std::getenv("TMPDIR");
    auto* d = new std::filesystem::path(std::filesystem::path(t && *t ? t : "/tmp") /
                                        ("paddle-image-fuzz." + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    return d;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}
inline std::filesystem::path write_input(std::string_view bytes, const std::string& name) {
  auto p = scratch() / name;
  std::filesystem::create_directories(p.parent_path());
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) {
    std::abort();
  }
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::abort();
  }
  std::fclose(f);
  return p;
}

} // namespace fuzz
