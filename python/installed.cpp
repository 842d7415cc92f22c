#include "python/installed.hpp"

#include "layers/packages.hpp"
#include "python/metadata.hpp"

#include <algorithm>

namespace python {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string parent_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool in_packages_dir(const std::string& location) {
  std::string dir = base_of(parent_of(location));
  return dir == "site-packages" || dir == "dist-packages";
}

} // namespace

std::vector<Distribution> installed_distributions(const layers::BaseView& view) {
  const auto& files = view.contents();
  auto layer_of = [&](const std::string& path) {
    const layers::ViewNode* n = view.find(path);
    return n != nullptr && n->layer >= 0 && static_cast<std::size_t>(n->layer) < view.layers().size()
               ? view.layers()[static_cast<std::size_t>(n->layer)]
               : std::string();
  };
  std::vector<Distribution> out;
  for (const auto& [path, content] : files) {
    std::string location;
    if (base_of(path) == "METADATA" && ends_with(parent_of(path), ".dist-info")) {
      location = parent_of(path);
    } else if (base_of(path) == "PKG-INFO" && ends_with(parent_of(path), ".egg-info")) {
      location = parent_of(path);
    } else if (ends_with(path, ".egg-info")) {
      location = path; // egg-info as a file
    } else {
      continue;
    }
    if (!in_packages_dir(location)) {
      continue;
    }
    Metadata m = parse_metadata(content);
    if (m.name.empty() || m.version.empty()) {
      continue;
    }
    Distribution d;
    d.name = m.name;
    d.version = m.version;
    d.location = location;
    d.requires_dist = m.requires_dist;
    d.layer = layer_of(path);
    if (auto it = files.find(location + "/INSTALLER"); it != files.end()) {
      d.installer = it->second.substr(0, it->second.find_first_of("\r\n"));
    }
    if (auto it = files.find(location + "/RECORD"); it != files.end()) {
      d.has_record = true;
      for (auto& e : parse_record(it->second)) {
        d.files.push_back(std::move(e.path));
      }
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(),
            [](const Distribution& a, const Distribution& b) { return a.location < b.location; });
  return out;
}

std::string purl(const Distribution& d) {
  return "pkg:pypi/" + layers::purl_encode(normalize_project_name(d.name)) + "@" + layers::purl_encode(d.version);
}

nlohmann::json to_json(const std::vector<Distribution>& dists) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : dists) {
    out.push_back({{"name", d.name},
                   {"version", d.version},
                   {"location", d.location},
                   {"installer", d.installer},
                   {"requires_dist", d.requires_dist},
                   {"files", d.files},
                   {"layer", d.layer}});
  }
  return out;
}

} // namespace python
