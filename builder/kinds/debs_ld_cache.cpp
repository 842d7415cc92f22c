// The debs layer's ldconfig step (DebsUnpack::update_ld_cache): what dpkg's ldconfig
// trigger does after packages that ask for it are unpacked, done without running
// anything in the image. The base's etc/ld.so.cache is read, every shared library the
// layer ships in a directory the loader's configuration (the base's and the layer's
// etc/ld.so.conf and etc/ld.so.conf.d) names is added under its SONAME as ldconfig adds
// it (a development link under its own name, the SONAME link made where it is missing),
// and the cache is written back in glibc's format.
#include "builder/kinds/debs_unpack.hpp"

#include "debian/ld_cache.hpp"
#include "util/error.hpp"

#include <algorithm>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::string dir_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  return p.substr(p.rfind('/') + 1);
}

// ldconfig's names: "lib*.so*" and "ld-*.so*".
bool library_name(const std::string& name) {
  return (name.rfind("lib", 0) == 0 || name.rfind("ld-", 0) == 0) && name.find(".so") != std::string::npos;
}

// "a/b/../c" -> "a/c"; "" when it climbs above the root.
std::string normalise(const std::string& p) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= p.size()) {
    auto next = p.find('/', at);
    std::string seg = p.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (seg == "..") {
      if (parts.empty()) {
        return {};
      }
      parts.pop_back();
    } else if (!seg.empty() && seg != ".") {
      parts.push_back(seg);
    }
    if (next == std::string::npos) {
      break;
    }
    at = next + 1;
  }
  std::string out;
  for (const auto& s : parts) {
    out += (out.empty() ? "" : "/") + s;
  }
  return out;
}

} // namespace

// The loader's search directories (the base's and the layer's etc/ld.so.conf and
// etc/ld.so.conf.d, then the trusted ones), each by where it lands in the tree (a merged
// /usr makes /lib/X and /usr/lib/X one): the first name ldconfig meets for each is the
// one its entries carry.
DebsUnpack::LoaderDirs DebsUnpack::loader_dirs() const {
  const auto& base = m_landing.contents();
  std::map<std::string, std::string> conf_files;
  for (auto it = base.lower_bound("etc/ld.so.conf"); it != base.end() && it->first.rfind("etc/ld.so.conf", 0) == 0;
       ++it) {
    conf_files[it->first] = it->second;
  }
  for (const auto& [path, content] : m_loader_conf) {
    conf_files[path] = content;
  }
  auto conf = conf_files.find("etc/ld.so.conf");
  const std::string triplet = m_architecture == "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  LoaderDirs out;
  out.dirs = debian::ld_search_dirs(conf == conf_files.end() ? "" : conf->second, conf_files, triplet);
  for (std::size_t i = 0; i < out.dirs.size(); ++i) {
    out.listed.emplace(canonical(out.dirs[i].substr(1), true), std::make_pair(i, out.dirs[i]));
  }
  return out;
}

// The base's etc/ld.so.cache, or an empty cache where the base has none.
debian::LdCache DebsUnpack::base_ld_cache() const {
  const auto& base = m_landing.contents();
  auto old = base.find("etc/ld.so.cache");
  if (old != base.end()) {
    return debian::parse_ld_cache(old->second, "the base's /etc/ld.so.cache");
  }
  if (const layers::ViewNode* n = m_landing.find("etc/ld.so.cache"); n != nullptr && n->type == '0') {
    throw Error(ErrorKind::input,
                "the base's /etc/ld.so.cache (" + std::to_string(n->size) + " bytes) is too large to read",
                "a debs layer that runs ldconfig's step adds to the base's loader cache");
  }
  return {};
}

// Every shared library of the layer in a directory the loader searches, as ldconfig
// lists it; `links` gets the SONAME links ldconfig would make (canonical path, target).
std::vector<debian::LdCacheEntry>
DebsUnpack::layer_libraries(const LoaderDirs& dirs, std::vector<std::pair<std::string, std::string>>& links) const {
  const std::int32_t want_flags = m_architecture == "arm64" ? debian::k_ld_flags_aarch64 : debian::k_ld_flags_x86_64;
  std::map<std::string, std::string> by_canonical; // canonical -> entry path
  for (const auto& [path, canon] : m_canonical) {
    by_canonical[canon] = path;
  }
  std::vector<debian::LdCacheEntry> added;
  for (const auto& [canon, path] : by_canonical) {
    const layers::Entry& e = m_entries.at(path);
    const std::string name = base_of(canon);
    auto dir = dirs.listed.find(dir_of(canon));
    if (dir == dirs.listed.end() || !library_name(name) ||
        (e.type != layers::Entry::Type::file && e.type != layers::Entry::Type::symlink)) {
      continue;
    }
    // The file a link leads to, among the layer's own files.
    std::string real = canon;
    const layers::Entry* file = &e;
    for (int hops = 0; file != nullptr && file->type == layers::Entry::Type::symlink && hops < 16; ++hops) {
      const std::string& t = file->link_target;
      real = normalise(t.front() == '/' ? t.substr(1) : dir_of(real) + "/" + t);
      real = real.empty() ? real : canonical(real, false);
      auto at = by_canonical.find(real);
      file = at == by_canonical.end() ? nullptr : &m_entries.at(at->second);
    }
    if (file == nullptr || file->type != layers::Entry::Type::file) {
      continue; // a link to the base's file, or a dangling one: ldconfig reads what the base has there
    }
    auto lib = debian::read_elf_library(file->source);
    if (!lib || lib->flags != want_flags) {
      continue;
    }
    std::string soname = lib->soname.empty() ? base_of(real) : lib->soname;
    std::string key = soname;
    if (e.type == layers::Entry::Type::symlink) {
      // ldconfig's rule: a link to the SONAME's file (or a development link "libx.so"
      // to it) is listed under its own name; any other link like a file.
      const std::string real_name = base_of(real);
      bool link =
          real_name == soname || (real_name.size() >= 3 && real_name.compare(real_name.size() - 3, 3, ".so") == 0 &&
                                  soname.rfind(real_name, 0) == 0);
      if (link) {
        key = name;
      }
    }
    added.push_back(debian::LdCacheEntry{lib->flags, key, dir->second.second + "/" + key, 0, 0});
    const std::string soname_path = dir_of(canon) + "/" + key;
    if (key != name && by_canonical.count(soname_path) == 0 && m_landing.find(soname_path) == nullptr) {
      links.emplace_back(soname_path, name); // ldconfig makes the SONAME's link when it is missing
    }
  }
  return added;
}

// The base's entries first, each key's in the order of the directories; a library the
// layer adds where the base had one of the same name replaces that entry.
std::vector<debian::LdCacheEntry> DebsUnpack::merge_ld_entries(std::vector<debian::LdCacheEntry> base,
                                                               const std::vector<debian::LdCacheEntry>& added,
                                                               const LoaderDirs& dirs) const {
  std::set<std::pair<std::string, std::string>> replaced;
  for (const auto& a : added) {
    replaced.emplace(a.key, a.value);
  }
  std::vector<debian::LdCacheEntry> entries;
  for (auto& e : base) {
    if (replaced.count({e.key, e.value}) == 0) {
      entries.push_back(std::move(e));
    }
  }
  entries.insert(entries.end(), added.begin(), added.end());
  std::map<std::string, std::size_t> ranks; // an entry's directory -> its place in the search
  for (const auto& e : entries) {
    std::string d = dir_of(e.value);
    if (ranks.count(d) == 0) {
      auto at = dirs.listed.find(d.empty() ? std::string() : canonical(d.substr(1), true));
      ranks[d] = at == dirs.listed.end() ? dirs.dirs.size() : at->second.first;
    }
  }
  std::vector<std::pair<std::size_t, debian::LdCacheEntry>> ordered;
  for (auto& e : entries) {
    ordered.emplace_back(ranks[dir_of(e.value)], std::move(e));
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<debian::LdCacheEntry> out;
  for (auto& [r, e] : ordered) {
    out.push_back(std::move(e));
  }
  return out;
}

void DebsUnpack::update_ld_cache(const std::function<void(const std::string&)>& info) {
  if (!m_ldconfig && m_loader_conf.empty()) {
    return;
  }
  const LoaderDirs dirs = loader_dirs();
  debian::LdCache cache = base_ld_cache();
  std::vector<std::pair<std::string, std::string>> links;
  const std::vector<debian::LdCacheEntry> added = layer_libraries(dirs, links);
  for (const auto& [canon, target] : links) {
    if (m_entries.count(canon) != 0) {
      continue;
    }
    layers::Entry l;
    l.path = canon;
    l.type = layers::Entry::Type::symlink;
    l.mode = 0777;
    l.link_target = target;
    m_entries[canon] = l;
    m_canonical[canon] = canon;
  }
  cache.entries = merge_ld_entries(std::move(cache.entries), added, dirs);
  cache.generator = "paddle-image debs layer (the base's cache and the layer's libraries)";
  add_record("etc/ld.so.cache", debian::write_ld_cache(cache), 0644);
  info("  ldconfig: /etc/ld.so.cache lists " + std::to_string(cache.entries.size()) + " libraries, " +
       std::to_string(added.size()) + " of them this layer's (" + std::to_string(links.size()) +
       " SONAME link(s) made)");
}

} // namespace builder
