#pragma once
// What ldconfig does for a system, without running it: the directories the loader's
// cache covers (etc/ld.so.conf with its includes, then the built-in ones), the ELF
// facts of a shared library (class, machine, SONAME), and /etc/ld.so.cache in glibc's
// format ("glibc-ld.so.cache1.1": a 48-byte header, 24-byte entries sorted as the
// loader's binary search expects, the string table, the extension with the generator
// and the glibc-hwcaps subdirectories), read and written.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace debian {

// ldconfig's flags for a 64-bit library of the machine: x86-64 0x0303, AArch64 0x0a03.
constexpr std::int32_t k_ld_flags_x86_64 = 0x0303;
constexpr std::int32_t k_ld_flags_aarch64 = 0x0a03;

struct ElfLibrary {
  std::string soname; // DT_SONAME; "" when the library has none
  std::int32_t flags = 0;
};
// The facts of `file` when it is a little-endian 64-bit ELF shared object for x86-64
// or AArch64 (what a cache of those systems lists); nullopt for anything else (another
// class or machine, an executable, not ELF, too short). Reads only the headers, the
// dynamic section and the SONAME.
std::optional<ElfLibrary> read_elf_library(const std::filesystem::path& file);

struct LdCacheEntry {
  std::int32_t flags = 0;
  std::string key;   // "libz.so.1"
  std::string value; // "/lib/x86_64-linux-gnu/libz.so.1"
  std::uint32_t osversion = 0;
  std::uint64_t hwcap = 0; // bit 62: the low 32 bits index the glibc-hwcaps subdirectories
  bool operator==(const LdCacheEntry&) const = default;
};

struct LdCache {
  std::vector<LdCacheEntry> entries; // in the file's order
  std::string generator;             // "ldconfig (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36"
  std::vector<std::string> hwcaps;   // glibc-hwcaps subdirectory names ("x86-64-v3")
  bool operator==(const LdCache&) const = default;
};

// Error(input) naming `what` for bytes that are not a cache in the new format (alone,
// or after the old format's entries as glibc before 2.32 wrote it) or that point outside.
LdCache parse_ld_cache(const std::string& bytes, const std::string& what);
// The file: entries sorted as ldconfig sorts them (by key, descending in the loader's
// numeric-aware order; for one key, glibc-hwcaps entries first, then by flags, then as
// given), strings de-duplicated.
std::string write_ld_cache(const LdCache& cache);
// glibc's _dl_cache_libcmp: <0, 0, >0 with runs of digits compared as numbers.
int ld_cache_libcmp(const std::string& a, const std::string& b);

// The directories ldconfig scans, in its order: those of `conf` ("etc/ld.so.conf"'s
// content) with `include` patterns expanded against `conf_files` (path without the
// leading '/' -> content, e.g. the etc/ld.so.conf.d/*.conf files), then the built-in
// ones of the machine (`triplet` "x86_64-linux-gnu": /lib/TRIPLET, /usr/lib/TRIPLET,
// /lib, /usr/lib). Absolute, without a trailing '/', duplicates dropped.
std::vector<std::string> ld_search_dirs(const std::string& conf, const std::map<std::string, std::string>& conf_files,
                                        const std::string& triplet);

} // namespace debian
