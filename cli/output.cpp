#include "cli/output.hpp"

#include "util/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

namespace cli {

Output Output::detect(bool json, bool quiet) {
  Output o;
  o.json = json;
  o.quiet = quiet;
  const char* ci = std::getenv("CI");
  o.tty = ::isatty(STDERR_FILENO) == 1 && (ci == nullptr || std::string(ci).empty() || std::string(ci) == "false");
  return o;
}

void Output::info(const std::string& line) const {
  if (quiet) {
    return;
  }
  if (tty) {
    std::cerr << "\r\033[K";
  }
  std::cerr << line << std::endl;
}

void Output::progress(const std::string& what, std::int64_t done, std::int64_t total) const {
  if (quiet || !tty || total <= 0) {
    return; // CI logs get the start/finish lines only
  }
  int pct = static_cast<int>(done * 100 / total);
  std::cerr << "\r\033[K  " << what << ": " << pct << "% (" << human_size(done) << " / " << human_size(total) << ")"
            << std::flush;
}

void Output::result(const nlohmann::json& j, const std::string& text) const {
  if (json) {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  } else if (!text.empty()) {
    std::cout << text << std::flush;
  }
}

std::filesystem::path default_cache_dir() {
  if (const char* d = std::getenv("PADDLE_IMAGE_CACHE"); d != nullptr && *d != '\0') {
    return d;
  }
  // The XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/') {
    return std::filesystem::path(x) / "paddle-image";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::filesystem::path(h) / ".cache" / "paddle-image";
  }
  return std::filesystem::temp_directory_path() / "paddle-image-cache";
}

std::int64_t parse_size(const std::string& text, const std::string& flag) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) { // std::invalid_argument / out_of_range: not a number
    throw util::Error(util::ErrorKind::usage, flag + ": '" + text + "' is not a size", "e.g. 500M, 10G or 1048576");
  }
  std::string unit = text.substr(pos);
  double mult = 1;
  for (auto& ch : unit) {
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  if (unit == "K" || unit == "KIB" || unit == "KB") {
    mult = 1024;
  } else if (unit == "M" || unit == "MIB" || unit == "MB") {
    mult = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GIB" || unit == "GB") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TIB" || unit == "TB") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else if (!unit.empty() && unit != "B") {
    throw util::Error(util::ErrorKind::usage, flag + ": '" + text + "' has an unknown unit", "use K, M, G or T");
  }
  if (v < 0) {
    throw util::Error(util::ErrorKind::usage, flag + ": a size must not be negative");
  }
  return static_cast<std::int64_t>(v * mult);
}

std::string human_size(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

} // namespace cli
