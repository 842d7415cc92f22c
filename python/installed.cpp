#include "python/installed.hpp"

#include "layers/packages.hpp"
#include "python/metadata.hpp"

#include <algorithm>

namespace python {

std::vector<Distribution> installed_distributions(const layers::BaseView& view) {
  const auto& files = view.contents();
  std::vector<Distribution> out;
  for (const auto& [path, content] : files) {
    std::string location = layers::python_dist_location(path);
    if (location.empty()) {
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
    d.layer = view.layer_of(path);
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
