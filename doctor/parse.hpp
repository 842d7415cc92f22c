#pragma once
// Pure parsers for what a GPU node exposes (/proc files, ld.so.cache, image
// requirement strings). No I/O, never throw on bad input: garbage gives empty results.
// Fuzzed by tests/fuzz/fuzz_parsers.cpp.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace doctor {

// First line of /proc/driver/nvidia/version (three forms; two-part versions such as
// 550.120 exist): the first token shaped like N.N[.N].
std::optional<std::string> parse_driver_version(std::string_view text);
// "Character devices:" section of /proc/devices: name -> major.
std::map<std::string, int> parse_proc_devices(std::string_view text);
// First field of each /proc/modules line.
std::set<std::string> parse_proc_modules(std::string_view text);
// "Key: value" lines (/proc/driver/nvidia/gpus/*/information).
std::map<std::string, std::string> parse_key_values(std::string_view text);

struct CacheEntry {
  std::string name; // "libcuda.so.1"
  std::string path; // "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
};
// /etc/ld.so.cache: new format ("glibc-ld.so.cache1.1"), also behind the old
// "ld.so-1.7.0" table. Out-of-range offsets are skipped.
std::vector<CacheEntry> parse_ld_so_cache(std::string_view bytes);

// NVIDIA_REQUIRE_CUDA ("cuda>=12.6 brand=tesla,driver>=470,driver<471 ..."): the cuda>= floor.
std::optional<std::string> parse_require_cuda(std::string_view value);
// "cuda=12.6,sm=90,sm=80,driver=525.60.13" (doctor --requires).
std::map<std::string, std::vector<std::string>> parse_requires(std::string_view value);
// Version from a library file name: "libcuda.so.535.129.03" -> "535.129.03".
std::optional<std::string> version_from_soname(std::string_view file_name, std::string_view stem);

} // namespace doctor
