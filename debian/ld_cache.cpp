#include "debian/ld_cache.hpp"

#include "util/error.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <cstring>
#include <fnmatch.h>
#include <fstream>
#include <set>
#include <sstream>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

constexpr char k_magic[] = "glibc-ld.so.cache";
constexpr char k_version[] = "1.1";
constexpr char k_old_magic[] = "ld.so-1.7.0";
constexpr std::uint32_t k_extension_magic = 0xeaa42174U;
constexpr std::uint64_t k_hwcap_extension = 1ULL << 62;
constexpr std::size_t k_header = 48, k_entry = 24;

template <typename T> T get(const std::string& b, std::size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof v);
  return v; // little-endian hosts only: the caches this reads and writes are x86-64's and AArch64's
}

template <typename T> void put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T> void put_at(std::string& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

std::string c_string(const std::string& b, std::size_t at, const std::string& what) {
  if (at >= b.size()) {
    throw Error(ErrorKind::input, what + ": a string offset (" + std::to_string(at) + ") is outside the file",
                "the base's loader cache is damaged: run ldconfig in the base");
  }
  auto end = b.find('\0', at);
  if (end == std::string::npos) {
    throw Error(ErrorKind::input, what + ": a string at " + std::to_string(at) + " has no end",
                "the base's loader cache is damaged: run ldconfig in the base");
  }
  return b.substr(at, end - at);
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// ldconfig's order of two entries (<0: a comes first).
int entry_order(const LdCacheEntry& a, const LdCacheEntry& b) {
  int c = ld_cache_libcmp(b.key, a.key);
  if (c != 0) {
    return c;
  }
  bool ax = (a.hwcap & k_hwcap_extension) != 0, bx = (b.hwcap & k_hwcap_extension) != 0;
  if (ax != bx) {
    return ax ? -1 : 1;
  }
  if (a.flags != b.flags) {
    return a.flags > b.flags ? -1 : 1;
  }
  return 0;
}

struct ElfReader {
  std::ifstream in;
  bool read(std::uint64_t off, void* out, std::size_t n) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(off));
    in.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in.gcount()) == n;
  }
};

} // namespace

int ld_cache_libcmp(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size()) {
    if (digit(a[i])) {
      if (j >= b.size() || !digit(b[j])) {
        return 1;
      }
      long long va = 0, vb = 0;
      while (i < a.size() && digit(a[i])) {
        va = std::min(va * 10 + (a[i++] - '0'), 1LL << 40);
      }
      while (j < b.size() && digit(b[j])) {
        vb = std::min(vb * 10 + (b[j++] - '0'), 1LL << 40);
      }
      if (va != vb) {
        return va < vb ? -1 : 1;
      }
    } else if (j < b.size() && digit(b[j])) {
      return -1;
    } else if (j >= b.size() || a[i] != b[j]) {
      return static_cast<unsigned char>(a[i]) - (j < b.size() ? static_cast<unsigned char>(b[j]) : 0);
    } else {
      ++i;
      ++j;
    }
  }
  return j < b.size() ? -static_cast<unsigned char>(b[j]) : 0;
}

std::optional<ElfLibrary> read_elf_library(const std::filesystem::path& file) {
  ElfReader r{std::ifstream(file, std::ios::binary)};
  unsigned char h[64];
  if (!r.in || !r.read(0, h, sizeof h) ||
      std::memcmp(h,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      h[4] != 2 || h[5] != 1) {
    return std::nullopt;
  }
  std::uint16_t type = 0, machine = 0, phentsize = 0, phnum = 0;
  std::uint64_t phoff = 0;
  std::memcpy(&type, h + 16, 2);
  std::memcpy(&machine, h + 18, 2);
  std::memcpy(&phoff, h + 32, 8);
  std::memcpy(&phentsize, h + 54, 2);
  std::memcpy(&phnum, h + 56, 2);
  ElfLibrary lib;
  if (type != 3 || phentsize < 56 || phnum > 512) {
    return std::nullopt; // ET_DYN only
  }
  lib.flags = machine == 62 ? k_ld_flags_x86_64 : machine == 183 ? k_ld_flags_aarch64 : 0;
  if (lib.flags == 0) {
    return std::nullopt;
  }
  struct Load {
    std::uint64_t offset, vaddr, filesz;
  };
  std::vector<Load> loads;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> dynamic; // offset, size
  for (std::uint16_t i = 0; i < phnum; ++i) {
    unsigned char ph[56];
    if (!r.read(phoff + std::uint64_t(i) * phentsize, ph, sizeof ph)) {
      return std::nullopt;
    }
    std::uint32_t pt = 0;
    std::uint64_t off = 0, vaddr = 0, filesz = 0;
    std::memcpy(&pt, ph, 4);
    std::memcpy(&off, ph + 8, 8);
    std::memcpy(&vaddr, ph + 16, 8);
    std::memcpy(&filesz, ph + 32, 8);
    if (pt == 1) {
      loads.push_back({off, vaddr, filesz});
    } else if (pt == 2) {
      dynamic = std::make_pair(off, std::min<std::uint64_t>(filesz, 1 << 20));
    }
  }
  if (!dynamic) {
    return lib; // a shared object without a dynamic section: no SONAME
  }
  std::uint64_t strtab = 0, soname = 0;
  bool has_soname = false;
  for (std::uint64_t at = 0; at + 16 <= dynamic->second; at += 16) {
    std::int64_t tag = 0;
    std::uint64_t val = 0;
    if (!r.read(dynamic->first + at, &tag, 8) || !r.read(dynamic->first + at + 8, &val, 8) || tag == 0) {
      break;
    }
    if (tag == 5) {
      strtab = val;
    } else if (tag == 14) {
      soname = val;
      has_soname = true;
    }
  }
  if (!has_soname) {
    return lib;
  }
  for (const auto& l : loads) {
    if (strtab >= l.vaddr && strtab < l.vaddr + l.filesz) {
      char name[256];
      std::uint64_t off = l.offset + (strtab - l.vaddr) + soname;
      std::size_t n = 0;
      while (n < sizeof name && r.read(off + n, name + n, 1) && name[n] != '\0') {
        ++n;
      }
      if (n == 0 || n == sizeof name || name[n] != '\0') {
        return std::nullopt;
      }
      lib.soname.assign(name, n);
      return lib;
    }
  }
  return std::nullopt;
}

LdCache parse_ld_cache(const std::string& b, const std::string& what) {
  std::size_t at = 0;
  const std::string fix = "the base's loader cache is damaged: run ldconfig in the base";
  if (b.compare(0, sizeof k_old_magic - 1, k_old_magic) == 0) {
    // The old format first (12-byte entries), then the new one, 8-aligned.
    if (b.size() < 16) {
      throw Error(ErrorKind::input, what + ": the file ends in its header", fix);
    }
    std::uint32_t n = get<std::uint32_t>(b, 12);
    at = (16 + std::size_t(n) * 12 + 7) & ~std::size_t(7);
  }
  if (b.size() < at + k_header || b.compare(at, sizeof k_magic - 1, k_magic) != 0 ||
      b.compare(at + 17, 3, k_version) != 0) {
    throw Error(ErrorKind::input, what + ": not a loader cache of glibc's format " + std::string(k_magic) + k_version,
                fix);
  }
  const std::size_t base = at;
  std::uint32_t nlibs = get<std::uint32_t>(b, base + 20);
  std::uint32_t ext = get<std::uint32_t>(b, base + 32);
  if (b.size() < base + k_header + std::size_t(nlibs) * k_entry) {
    throw Error(ErrorKind::input, what + ": " + std::to_string(nlibs) + " entries do not fit in the file", fix);
  }
  LdCache c;
  // String offsets count from the new header (from the file's start when it is alone).
  for (std::uint32_t i = 0; i < nlibs; ++i) {
    std::size_t e = base + k_header + std::size_t(i) * k_entry;
    LdCacheEntry x;
    x.flags = get<std::int32_t>(b, e);
    x.key = c_string(b, base + get<std::uint32_t>(b, e + 4), what);
    x.value = c_string(b, base + get<std::uint32_t>(b, e + 8), what);
    x.osversion = get<std::uint32_t>(b, e + 12);
    x.hwcap = get<std::uint64_t>(b, e + 16);
    c.entries.push_back(std::move(x));
  }
  if (ext != 0) {
    std::size_t x = base + ext;
    if (b.size() < x + 8 || get<std::uint32_t>(b, x) != k_extension_magic) {
      throw Error(ErrorKind::input, what + ": its extension (at " + std::to_string(ext) + ") is not one", fix);
    }
    std::uint32_t count = get<std::uint32_t>(b, x + 4);
    if (count > 64 || b.size() < x + 8 + std::size_t(count) * 16) {
      throw Error(ErrorKind::input, what + ": its extension's " + std::to_string(count) + " sections do not fit", fix);
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      std::size_t s = x + 8 + std::size_t(i) * 16;
      std::uint32_t tag = get<std::uint32_t>(b, s), off = get<std::uint32_t>(b, s + 8),
                    size = get<std::uint32_t>(b, s + 12);
      if (b.size() < base + std::size_t(off) + size) {
        throw Error(ErrorKind::input, what + ": an extension section ends outside the file", fix);
      }
      if (tag == 0) {
        c.generator = b.substr(base + off, size);
      } else if (tag == 1) {
        for (std::uint32_t k = 0; k + 4 <= size; k += 4) {
          c.hwcaps.push_back(c_string(b, base + get<std::uint32_t>(b, base + off + k), what));
        }
      }
    }
  }
  return c;
}

std::string write_ld_cache(const LdCache& cache) {
  std::vector<LdCacheEntry> entries = cache.entries;
  std::stable_sort(entries.begin(), entries.end(),
                   [](const LdCacheEntry& a, const LdCacheEntry& b) { return entry_order(a, b) < 0; });
  const std::size_t strings_at = k_header + entries.size() * k_entry;
  std::string strings;
  std::map<std::string, std::uint32_t> offsets;
  auto intern = [&](const std::string& s) {
    auto it = offsets.find(s);
    if (it != offsets.end()) {
      return it->second;
    }
    auto off = static_cast<std::uint32_t>(strings_at + strings.size());
    strings += s;
    strings += '\0';
    offsets.emplace(s, off);
    return off;
  };
  std::string body;
  for (const auto& e : entries) {
    put(body, e.flags);
    put(body, intern(e.key));
    put(body, intern(e.value));
    put(body, e.osversion);
    put(body, e.hwcap);
  }
  std::vector<std::uint32_t> hwcap_offsets;
  for (const auto& h : cache.hwcaps) {
    hwcap_offsets.push_back(intern(h));
  }
  std::string out(k_magic, sizeof k_magic - 1);
  out += k_version;
  put(out, static_cast<std::uint32_t>(entries.size()));
  put(out, static_cast<std::uint32_t>(strings.size()));
  out += std::string(1, '\2') + std::string(3, '\0'); // little-endian, padding
  const std::size_t ext_field = out.size();
  put(out, std::uint32_t(0));
  out += std::string(12, '\0');
  out += body;
  out += strings;
  while (out.size() % 4 != 0) {
    out += '\0';
  }
  put_at(out, ext_field, static_cast<std::uint32_t>(out.size()));
  const std::uint32_t sections = cache.hwcaps.empty() ? 1 : 2;
  put(out, k_extension_magic);
  put(out, sections);
  std::size_t data = out.size() + sections * 16;
  std::size_t hwcaps_at = (data + cache.generator.size() + 3) & ~std::size_t(3);
  for (std::uint32_t tag : {0U, 1U}) {
    if (tag == 1 && cache.hwcaps.empty()) {
      break;
    }
    put(out, tag);
    put(out, std::uint32_t(0));
    put(out, static_cast<std::uint32_t>(tag == 0 ? data : hwcaps_at));
    put(out, static_cast<std::uint32_t>(tag == 0 ? cache.generator.size() : hwcap_offsets.size() * 4));
  }
  out += cache.generator;
  if (!cache.hwcaps.empty()) {
    out.resize(hwcaps_at, '\0');
    for (auto o : hwcap_offsets) {
      put(out, o);
    }
  }
  return out;
}

namespace {

void add_conf(const std::string& text, const std::string& file, const std::map<std::string, std::string>& conf_files,
              int depth, std::vector<std::string>& dirs) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto hash = line.find('#');
    if (hash != std::string::npos) {
      line.resize(hash);
    }
    std::string t = util::trim(line);
    if (t.empty() || t.rfind("hwcap", 0) == 0) {
      continue;
    }
    if (t.rfind("include", 0) == 0 && t.size() > 7 && (t[7] == ' ' || t[7] == '\t')) {
      if (depth > 8) {
        continue;
      }
      std::istringstream pats(t.substr(8));
      for (std::string pat; pats >> pat;) {
        if (pat.front() != '/') {
          pat = "/" + file.substr(0, file.rfind('/') + 1) + pat;
        }
        for (const auto& [path, content] : conf_files) { // sorted, as glob() sorts
          if (::fnmatch(pat.c_str(), ("/" + path).c_str(), FNM_PATHNAME) == 0) {
            add_conf(content, path, conf_files, depth + 1, dirs);
          }
        }
      }
      continue;
    }
    for (auto& c : t) {
      if (c == ',' || c == ':' || c == '\t') {
        c = ' ';
      }
    }
    std::istringstream words(t);
    for (std::string d; words >> d;) {
      auto eq = d.find('=');
      if (eq != std::string::npos) {
        d.resize(eq); // "DIR=TYPE", an old form
      }
      while (d.size() > 1 && d.back() == '/') {
        d.pop_back();
      }
      if (!d.empty() && d.front() == '/') {
        dirs.push_back(d);
      }
    }
  }
}

} // namespace

std::vector<std::string> ld_search_dirs(const std::string& conf, const std::map<std::string, std::string>& conf_files,
                                        const std::string& triplet) {
  std::vector<std::string> dirs;
  add_conf(conf, "etc/ld.so.conf", conf_files, 0, dirs);
  for (const std::string& d :
       {"/lib/" + triplet, "/usr/lib/" + triplet, std::string("/lib"), std::string("/usr/lib")}) {
    dirs.push_back(d);
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& d : dirs) {
    if (seen.insert(d).second) {
      out.push_back(d);
    }
  }
  return out;
}

} // namespace debian
