#include "layers/packages.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

namespace layers {

using util::Error;
using util::ErrorKind;

namespace {

constexpr std::int64_t k_max_dpkg_status = 16 << 20;  // var/lib/dpkg/status
constexpr std::int64_t k_max_dpkg_status_d = 1 << 20; // one status.d file
constexpr std::int64_t k_max_python_metadata = 4 << 20;
constexpr std::int64_t k_max_os_release = 64 << 10;
constexpr std::int64_t k_max_embedded_sbom = 16 << 20;

constexpr const char* k_dpkg_status = "var/lib/dpkg/status";
constexpr const char* k_dpkg_status_d = "var/lib/dpkg/status.d";
constexpr const char* k_sbom_dir = "var/lib/db/sbom";

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

bool is_packages_dir(const std::string& name) {
  return name == "site-packages" || name == "dist-packages";
}

enum class Kind { none, dpkg_status, dpkg_status_d, python, os_release, embedded_sbom };

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
  if (parent_of(path) == k_sbom_dir && base_of(path).size() > 10 && ends_with(path, ".spdx.json")) {
    return {Kind::embedded_sbom, path};
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
  case Kind::embedded_sbom:
    return k_max_embedded_sbom;
  case Kind::none:
    break;
  }
  return 0;
}

// Unquotes a shell-style os-release value ("..." with backslash escapes, or '...').
std::string os_release_value(const std::string& raw) {
  std::string v = util::trim(raw);
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

// dpkg's Status "want ok installed", with want "install" or "hold" (a held package is
// installed all the same).
bool status_installed(const std::string& status) {
  auto w = split_words(status);
  return w.size() == 3 && (w[0] == "install" || w[0] == "hold") && w[1] == "ok" && w[2] == "installed";
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
    if (util::trim(line).empty()) {
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
    fields.emplace(util::ascii_lower(util::trim(line.substr(0, colon))), util::trim(line.substr(colon + 1)));
  }
  flush();
  return out;
}

OsRelease parse_os_release(const std::string& content) {
  OsRelease out;
  for (const auto& raw : split_lines(content)) {
    std::string line = util::trim(raw);
    if (line.empty() || line.front() == '#') {
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    std::string key = util::trim(line.substr(0, eq));
    if (key == "ID") {
      out.id = os_release_value(line.substr(eq + 1));
    } else if (key == "VERSION_ID") {
      out.version_id = os_release_value(line.substr(eq + 1));
    } else if (key == "PRETTY_NAME") {
      out.pretty_name = os_release_value(line.substr(eq + 1));
    }
  }
  return out;
}

std::string python_dist_location(const std::string& path) {
  auto c = classify(path);
  return c.kind == Kind::python ? c.location : std::string();
}

bool is_embedded_sbom(const std::string& path) {
  return classify(path).kind == Kind::embedded_sbom;
}

std::int64_t inventory_file_cap(const std::string& path) {
  return cap_for(classify(path).kind);
}

Inventory inventory_of(const std::map<std::string, std::string>& files,
                       const std::function<std::string(const std::string&)>& layer_of) {
  Inventory inv;
  std::optional<OsRelease> etc_os, lib_os;
  for (const auto& [path, content] : files) {
    auto c = classify(path);
    if (c.kind == Kind::none || static_cast<std::int64_t>(content.size()) > cap_for(c.kind)) {
      continue;
    }
    switch (c.kind) {
    case Kind::dpkg_status:
      for (auto& p : parse_dpkg_status(content, true)) {
        p.layer = layer_of(path);
        inv.packages.push_back(std::move(p));
      }
      break;
    case Kind::dpkg_status_d: {
      auto packages = parse_dpkg_status(content, false);
      if (!packages.empty()) {
        Package p = packages.front();
        p.location = c.location;
        p.layer = layer_of(path);
        inv.packages.push_back(std::move(p));
      }
      break;
    }
    case Kind::python:
    case Kind::embedded_sbom:
      break; // python::installed_distributions and builder::image_sbom read these
    case Kind::os_release:
      (path == "etc/os-release" ? etc_os : lib_os) = parse_os_release(content);
      break;
    case Kind::none:
      break;
    }
  }
  if (const auto& os = etc_os ? etc_os : lib_os) {
    inv.os_id = os->id;
    inv.os_version_id = os->version_id;
  }
  std::sort(inv.packages.begin(), inv.packages.end(), [](const Package& a, const Package& b) {
    return std::tie(a.type, a.name, a.version, a.location, a.arch, a.layer) <
           std::tie(b.type, b.name, b.version, b.location, b.arch, b.layer);
  });
  return inv;
}

std::string purl(const Package& p, const Inventory& inv) {
  if (p.type == "deb") {
    std::string os = inv.os_id.empty() ? "debian" : util::ascii_lower(inv.os_id);
    std::string out = "pkg:deb/" + util::percent_encode(os) + "/" + util::percent_encode(p.name) + "@" +
                      util::percent_encode(p.version);
    std::string sep = "?";
    if (!p.arch.empty()) {
      out += sep + "arch=" + util::percent_encode(p.arch);
      sep = "&";
    }
    if (!inv.os_version_id.empty()) {
      out += sep + "distro=" + util::percent_encode(os + "-" + inv.os_version_id);
    }
    return out;
  }
  return "pkg:generic/" + util::percent_encode(p.name) + "@" + util::percent_encode(p.version);
}

} // namespace layers
