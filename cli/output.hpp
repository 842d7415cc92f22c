#pragma once
// Terminal/CI output shared by the commands: plain lines in CI or when stderr is not
// a terminal, an updating progress line on a terminal; JSON on stdout with --json.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace cli {

struct Output {
  bool json = false;
  bool quiet = false;
  bool tty = false; // stderr is a terminal and CI is not set

  static Output detect(bool json, bool quiet);
  void info(const std::string& line) const;
  void progress(const std::string& what, std::int64_t done, std::int64_t total) const;
  void result(const nlohmann::json& j, const std::string& text) const; // stdout
};

std::filesystem::path default_cache_dir();
// "10G", "500M", "1024"; errors name `flag` (usage, exit 2).
std::int64_t parse_size(const std::string& text, const std::string& flag);
std::string human_size(std::int64_t bytes);

} // namespace cli
