#include "layers/packages.hpp"

#include "layers/tar.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

namespace layers {

using nlohmann::json;
using util::Error;
using util::ErrorKind;

namespace {

constexpr std::int64_t k_max_dpkg_status = 16 << 20;  // var/lib/dpkg/status
constexpr std::int64_t k_max_dpkg_status_d = 1 << 20; // one status.d file
constexpr std::int64_t k_max_python_metadata = 4 << 20;
constexpr std::int64_t k_max_os_release = 64 << 10;

constexpr const char* k_dpkg_status = "var/lib/dpkg/status";
constexpr const char* k_dpkg_status_d = "var/lib/dpkg/status.d";
constexpr const char* k_whiteout_prefix = ".wh.";
constexpr const char* k_opaque_marker = ".wh..wh..opq";

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return s;
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) {
    return {};
  }
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Lines without their "\n" or "\r\n".
std::vector<std::string> split_lines(const std::string& content) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < content.size()) {
    auto nl = content.find('\n', pos);
    std::string line = content.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    out.push_back(std::move(line));
    if (nl == std::string::npos) {
      break;
    }
    pos = nl + 1;
  }
  return out;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto b = s.find_first_not_of(" \t", pos);
    if (b == std::string::npos) {
      break;
    }
    auto e = s.find_first_of(" \t", b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    pos = e == std::string::npos ? s.size() : e;
  }
  return out;
}

// "a//b/./c/" -> "a/b/c"; ".." drops the previous component (never above the root).
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    auto slash = path.find('/', pos);
    std::string part = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (part == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    if (slash == std::string::npos) {
      break;
    }
    pos = slash + 1;
  }
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) {
      out += '/';
    }
    out += p;
  }
  return out;
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    auto slash = path.find('/', pos);
    out.push_back(path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    if (slash == std::string::npos) {
      break;
    }
    pos = slash + 1;
  }
  return out;
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// `path` is `removed` itself or lies beneath it ("" is the root).
bool covered_by(const std::string& removed, const std::string& path) {
  return removed.empty() || path == removed || path.rfind(removed + "/", 0) == 0;
}

// `path` lies strictly beneath directory `dir` ("" is the root).
bool beneath(const std::string& dir, const std::string& path) {
  return dir.empty() ? !path.empty() : path.rfind(dir + "/", 0) == 0;
}

bool is_packages_dir(const std::string& name) {
  return name == "site-packages" || name == "dist-packages";
}

enum class Kind { none, dpkg_status, dpkg_status_d, python, os_release };

struct Classified {
  Kind kind = Kind::none;
  std::string location; // python: the .dist-info/.egg-info path
};

// What a (normalised) member path is to the scanner, judged by its path alone.
Classified classify(const std::string& path) {
  if (path == k_dpkg_status) {
    return {Kind::dpkg_status, path};
  }
  if (parent_of(path) == k_dpkg_status_d && !base_of(path).empty()) {
    return {Kind::dpkg_status_d, path};
  }
  if (path == "etc/os-release" || path == "usr/lib/os-release") {
    return {Kind::os_release, path};
  }
  auto c = components(path);
  auto n = c.size();
  if (n >= 3 && is_packages_dir(c[n - 3]) &&
      ((c[n - 1] == "METADATA" && ends_with(c[n - 2], ".dist-info")) ||
       (c[n - 1] == "PKG-INFO" && ends_with(c[n - 2], ".egg-info")))) {
    return {Kind::python, parent_of(path)};
  }
  if (n >= 2 && is_packages_dir(c[n - 2]) && ends_with(c[n - 1], ".egg-info")) {
    return {Kind::python, path}; // egg-info as a file (only a regular file is read)
  }
  return {};
}

std::int64_t cap_for(Kind kind) {
  switch (kind) {
  case Kind::dpkg_status:
    return k_max_dpkg_status;
  case Kind::dpkg_status_d:
    return k_max_dpkg_status_d;
  case Kind::python:
    return k_max_python_metadata;
  case Kind::os_release:
    return k_max_os_release;
  case Kind::none:
    break;
  }
  return 0;
}

struct OsRelease {
  std::string id, version_id;
};

// Unquotes a shell-style os-release value ("..." with backslash escapes, or '...').
std::string os_release_value(const std::string& raw) {
  std::string v = trim(raw);
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
    return v.substr(1, v.size() - 2);
  }
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    std::string out;
    for (std::size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] == '\\' && i + 2 < v.size()) {
        ++i;
      }
      out += v[i];
    }
    return out;
  }
  return v;
}

OsRelease parse_os_release(const std::string& content) {
  OsRelease out;
  for (const auto& raw : split_lines(content)) {
    std::string line = trim(raw);
    if (line.empty() || line.front() == '#') {
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    std::string key = trim(line.substr(0, eq));
    if (key == "ID") {
      out.id = os_release_value(line.substr(eq + 1));
    } else if (key == "VERSION_ID") {
      out.version_id = os_release_value(line.substr(eq + 1));
    }
  }
  return out;
}

// dpkg's Status "want ok installed", with want "install" or "hold" (a held package is
// installed all the same).
bool status_installed(const std::string& status) {
  auto w = split_words(status);
  return w.size() == 3 && (w[0] == "install" || w[0] == "hold") && w[1] == "ok" && w[2] == "installed";
}

json package_to_json(const Package& p) {
  return {{"type", p.type}, {"name", p.name},         {"version", p.version},
          {"arch", p.arch}, {"location", p.location}, {"layer", p.layer}};
}

Package package_from_json(const json& j) {
  Package p;
  p.type = j.at("type").get<std::string>();
  p.name = j.at("name").get<std::string>();
  p.version = j.at("version").get<std::string>();
  p.arch = j.at("arch").get<std::string>();
  p.location = j.at("location").get<std::string>();
  p.layer = j.at("layer").get<std::string>();
  return p;
}

json packages_to_json(const std::vector<Package>& packages) {
  json out = json::array();
  for (const auto& p : packages) {
    out.push_back(package_to_json(p));
  }
  return out;
}

std::vector<Package> packages_from_json(const json& j) {
  std::vector<Package> out;
  for (const auto& p : j) {
    out.push_back(package_from_json(p));
  }
  return out;
}

// Percent-encodes all but the unreserved characters (RFC 3986), as purl segments and
// qualifier values want.
std::string purl_encode(const std::string& s) {
  static const char* k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 0xF];
    }
  }
  return out;
}

} // namespace

std::vector<Package> parse_dpkg_status(const std::string& content, bool installed_only) {
  std::vector<Package> out;
  std::map<std::string, std::string> fields; // lowercased name -> value (first wins)
  bool bad = false;
  bool any = false;
  auto flush = [&] {
    if (any && !bad) {
      auto get = [&](const char* name) {
        auto it = fields.find(name);
        return it == fields.end() ? std::string() : it->second;
      };
      Package p;
      p.type = "deb";
      p.name = get("package");
      p.version = get("version");
      p.arch = get("architecture");
      p.location = k_dpkg_status;
      auto status = fields.find("status");
      bool installed = status == fields.end() ? !installed_only : status_installed(status->second);
      if (!p.name.empty() && !p.version.empty() && installed) {
        out.push_back(std::move(p));
      }
    }
    fields.clear();
    bad = false;
    any = false;
  };
  for (const auto& line : split_lines(content)) {
    if (trim(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (!any) {
        bad = true; // a continuation of nothing
      }
      any = true;
      continue; // the fields read here are single-line
    }
    any = true;
    if (line.front() == '#') {
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0) {
      bad = true;
      continue;
    }
    fields.emplace(lower(trim(line.substr(0, colon))), trim(line.substr(colon + 1)));
  }
  flush();
  return out;
}

std::optional<Package> parse_python_metadata(const std::string& content) {
  std::string name;
  std::string version;
  bool have_name = false;
  bool have_version = false;
  for (const auto& line : split_lines(content)) {
    if (line.empty()) {
      break; // the body (long description) starts here
    }
    if (line.front() == ' ' || line.front() == '\t') {
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string key = lower(trim(line.substr(0, colon)));
    if (key == "name" && !have_name) {
      name = trim(line.substr(colon + 1));
      have_name = true;
    } else if (key == "version" && !have_version) {
      version = trim(line.substr(colon + 1));
      have_version = true;
    }
  }
  if (name.empty() || version.empty()) {
    return std::nullopt;
  }
  Package p;
  p.type = "pypi";
  p.name = name;
  p.version = version;
  return p;
}

std::string normalize_python_name(const std::string& name) {
  std::string out;
  bool in_run = false;
  for (char c : lower(name)) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) {
        out += '-';
      }
      in_run = true;
    } else {
      out += c;
      in_run = false;
    }
  }
  return out;
}

json to_json(const LayerPackages& layer) {
  json j = {{"format", k_layer_packages_format},
            {"dpkg_status", layer.dpkg_status ? packages_to_json(*layer.dpkg_status) : json(nullptr)},
            {"dpkg_status_d", packages_to_json(layer.dpkg_status_d)},
            {"python", packages_to_json(layer.python)},
            {"whiteouts", layer.whiteouts},
            {"opaque_dirs", layer.opaque_dirs},
            {"os_id", layer.os_id},
            {"os_version_id", layer.os_version_id}};
  return j;
}

LayerPackages layer_packages_from_json(const json& j) {
  try {
    if (!j.is_object() || j.value("format", 0) != k_layer_packages_format) {
      throw Error(ErrorKind::input,
                  "layer package record has another format (want " + std::to_string(k_layer_packages_format) + ")");
    }
    LayerPackages out;
    const auto& status = j.at("dpkg_status");
    if (!status.is_null()) {
      out.dpkg_status = packages_from_json(status);
    }
    out.dpkg_status_d = packages_from_json(j.at("dpkg_status_d"));
    out.python = packages_from_json(j.at("python"));
    out.whiteouts = j.at("whiteouts").get<std::vector<std::string>>();
    out.opaque_dirs = j.at("opaque_dirs").get<std::vector<std::string>>();
    out.os_id = j.at("os_id").get<std::string>();
    out.os_version_id = j.at("os_version_id").get<std::string>();
    return out;
  } catch (const json::exception& e) {
    throw Error(ErrorKind::input, std::string("invalid layer package record: ") + e.what());
  }
}

LayerPackages scan_layer_packages(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& layer,
                                  const std::string& what) {
  LayerPackages out;
  std::map<std::string, Package> status_d;                       // by location; a later duplicate member wins
  std::map<std::string, Package> python;                         // by location
  std::map<std::string, Package> python_by_file;                 // metadata file path -> package, for hard links
  std::vector<std::pair<std::string, std::string>> python_links; // (metadata file, link target)
  std::optional<OsRelease> etc_os;
  std::optional<OsRelease> lib_os;

  auto want = [&](const TarMember& raw) {
    std::string path = normalize(raw.path);
    std::string base = base_of(path);
    if (base.rfind(k_whiteout_prefix, 0) == 0) {
      if (base == k_opaque_marker) {
        out.opaque_dirs.push_back(parent_of(path));
      } else if (base.rfind(".wh..wh.", 0) != 0 && base.size() > 4) { // other ".wh..wh.*" are aufs internals
        std::string dir = parent_of(path);
        out.whiteouts.push_back(dir.empty() ? base.substr(4) : dir + "/" + base.substr(4));
      }
      return false;
    }
    auto c = classify(path);
    if (c.kind == Kind::none) {
      return false;
    }
    if (raw.type == '1' && c.kind == Kind::python) {
      python_links.emplace_back(path, normalize(raw.link_target));
      return false;
    }
    if (raw.type != '0') {
      return false;
    }
    if (raw.size > cap_for(c.kind)) {
      if (c.kind == Kind::dpkg_status) {
        out.dpkg_status = std::vector<Package>{}; // shipped (hides the lower one) but not read
      }
      return false;
    }
    return true;
  };

  auto on_content = [&](const TarMember& raw, const std::string& content) {
    std::string path = normalize(raw.path);
    auto c = classify(path);
    switch (c.kind) {
    case Kind::dpkg_status: {
      auto packages = parse_dpkg_status(content, true);
      for (auto& p : packages) {
        p.layer = layer;
      }
      out.dpkg_status = std::move(packages);
      break;
    }
    case Kind::dpkg_status_d: {
      auto packages = parse_dpkg_status(content, false);
      if (packages.empty()) {
        status_d.erase(c.location);
        break;
      }
      Package p = packages.front();
      p.location = c.location;
      p.layer = layer;
      status_d[c.location] = std::move(p);
      break;
    }
    case Kind::python: {
      auto p = parse_python_metadata(content);
      if (!p) {
        python.erase(c.location);
        python_by_file.erase(path);
        break;
      }
      p->location = c.location;
      p->layer = layer;
      python_by_file[path] = *p;
      python[c.location] = std::move(*p);
      break;
    }
    case Kind::os_release:
      (path == "etc/os-release" ? etc_os : lib_os) = parse_os_release(content);
      break;
    case Kind::none:
      break;
    }
  };

  scan_tar(read, what, want, on_content);

  for (const auto& [file, target] : python_links) {
    auto it = python_by_file.find(target);
    if (it == python_by_file.end()) {
      continue;
    }
    Package p = it->second;
    p.location = classify(file).location;
    python[p.location] = std::move(p);
  }
  for (auto& [location, p] : status_d) {
    out.dpkg_status_d.push_back(std::move(p));
  }
  for (auto& [location, p] : python) {
    out.python.push_back(std::move(p));
  }
  std::sort(out.whiteouts.begin(), out.whiteouts.end());
  out.whiteouts.erase(std::unique(out.whiteouts.begin(), out.whiteouts.end()), out.whiteouts.end());
  std::sort(out.opaque_dirs.begin(), out.opaque_dirs.end());
  out.opaque_dirs.erase(std::unique(out.opaque_dirs.begin(), out.opaque_dirs.end()), out.opaque_dirs.end());
  if (const auto& os = etc_os ? etc_os : lib_os) {
    out.os_id = os->id;
    out.os_version_id = os->version_id;
  }
  return out;
}

Inventory merge_layers(const std::vector<LayerPackages>& bottom_to_top) {
  std::optional<std::vector<Package>> debs;
  std::map<std::string, Package> status_d; // by location
  std::map<std::string, Package> python;   // by location
  Inventory inv;
  for (const auto& layer : bottom_to_top) {
    // What this layer removes from the layers below it.
    for (const auto& w : layer.whiteouts) {
      if (covered_by(w, k_dpkg_status)) {
        debs.reset();
      }
      std::erase_if(status_d, [&](const auto& kv) { return covered_by(w, kv.first); });
      std::erase_if(python, [&](const auto& kv) {
        const auto& loc = kv.first;
        return covered_by(w, loc) || w == loc + "/METADATA" || w == loc + "/PKG-INFO";
      });
    }
    for (const auto& d : layer.opaque_dirs) {
      if (beneath(d, k_dpkg_status)) {
        debs.reset();
      }
      std::erase_if(status_d, [&](const auto& kv) { return beneath(d, kv.first); });
      std::erase_if(python, [&](const auto& kv) { return beneath(d, kv.first); });
    }
    // What it adds.
    if (layer.dpkg_status) {
      debs = *layer.dpkg_status;
    }
    for (const auto& p : layer.dpkg_status_d) {
      status_d[p.location] = p;
    }
    for (const auto& p : layer.python) {
      python[p.location] = p;
    }
    if (!layer.os_id.empty() || !layer.os_version_id.empty()) {
      inv.os_id = layer.os_id;
      inv.os_version_id = layer.os_version_id;
    }
  }
  if (debs) {
    inv.packages = std::move(*debs);
  }
  for (auto& [location, p] : status_d) {
    inv.packages.push_back(std::move(p));
  }
  for (auto& [location, p] : python) {
    inv.packages.push_back(std::move(p));
  }
  std::sort(inv.packages.begin(), inv.packages.end(), [](const Package& a, const Package& b) {
    return std::tie(a.type, a.name, a.version, a.location, a.arch, a.layer) <
           std::tie(b.type, b.name, b.version, b.location, b.arch, b.layer);
  });
  return inv;
}

std::string purl(const Package& p, const Inventory& inv) {
  if (p.type == "deb") {
    std::string os = inv.os_id.empty() ? "debian" : lower(inv.os_id);
    std::string out = "pkg:deb/" + purl_encode(os) + "/" + purl_encode(p.name) + "@" + purl_encode(p.version);
    std::string sep = "?";
    if (!p.arch.empty()) {
      out += sep + "arch=" + purl_encode(p.arch);
      sep = "&";
    }
    if (!inv.os_version_id.empty()) {
      out += sep + "distro=" + purl_encode(os + "-" + inv.os_version_id);
    }
    return out;
  }
  if (p.type == "pypi") {
    return "pkg:pypi/" + purl_encode(normalize_python_name(p.name)) + "@" + purl_encode(p.version);
  }
  return "pkg:generic/" + purl_encode(p.name) + "@" + purl_encode(p.version);
}

} // namespace layers
