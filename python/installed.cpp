#include "python/installed.hpp"

#include "layers/packages.hpp"
#include "python/metadata.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <exception>

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

namespace {

std::string strip_slashes(std::string p) {
  while (!p.empty() && p.front() == '/') {
    p.erase(0, 1);
  }
  while (!p.empty() && p.back() == '/') {
    p.pop_back();
  }
  return p;
}

std::string parent_dir(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

// The site directories of the interpreter at `interpreter` (an image path) when it is
// not a venv's.
void interpreter_site_dirs(const std::string& interpreter, const std::string& v, std::vector<std::string>& out) {
  std::string bin = parent_dir(strip_slashes(interpreter));
  std::string prefix = parent_dir(bin);
  if (bin == "usr/bin") {
    // Debian's python3: its own dist-packages and /usr/local's, as its site.py patch.
    out.push_back("usr/local/lib/python" + v + "/dist-packages");
    out.push_back("usr/lib/python3/dist-packages");
    out.push_back("usr/lib/python" + v + "/dist-packages");
  }
  std::string root = prefix.empty() ? std::string() : prefix + "/";
  out.push_back(root + "lib/python" + v + "/site-packages");
  out.push_back(root + "lib64/python" + v + "/site-packages");
}

// "key = value" of a pyvenv.cfg.
std::string venv_setting(const std::string& cfg, const std::string& key) {
  std::size_t i = 0;
  while (i < cfg.size()) {
    auto eol = cfg.find('\n', i);
    std::string line = cfg.substr(i, eol == std::string::npos ? std::string::npos : eol - i);
    i = eol == std::string::npos ? cfg.size() : eol + 1;
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    // Blanks around the key and value, and the '\r' of a CRLF line.
    auto trim = [](std::string_view t) { return util::trim_left(util::trim_right(t, " \t\r"), " \t"); };
    if (trim(line.substr(0, eq)) == key) {
      return trim(line.substr(eq + 1));
    }
  }
  return {};
}

} // namespace

std::vector<std::string> target_site_dirs(const layers::BaseView& view, const PythonTarget& target) {
  std::vector<std::string> out;
  std::string v = std::to_string(target.major) + "." + std::to_string(target.minor);
  if (!target.site_packages.empty()) {
    out.push_back(strip_slashes(target.site_packages));
  }
  std::string prefix = parent_dir(parent_dir(strip_slashes(target.interpreter)));
  const auto& files = view.contents();
  auto cfg = files.find(prefix.empty() ? std::string("pyvenv.cfg") : prefix + "/pyvenv.cfg");
  if (!target.interpreter.empty() && cfg != files.end()) {
    std::string root = prefix.empty() ? std::string() : prefix + "/";
    out.push_back(root + "lib/python" + v + "/site-packages");
    out.push_back(root + "lib64/python" + v + "/site-packages");
    std::string system = venv_setting(cfg->second, "include-system-site-packages");
    std::string home = venv_setting(cfg->second, "home");
    if ((system == "true" || system == "True") && !home.empty()) {
      interpreter_site_dirs(home + "/python" + v, v, out);
    }
  } else if (!target.interpreter.empty()) {
    interpreter_site_dirs(target.interpreter, v, out);
  }
  // Each also as the view really has it (a site directory reached through a link).
  std::vector<std::string> resolved;
  for (const auto& d : out) {
    try {
      resolved.push_back(view.resolve(d, true, nullptr, "/" + d));
    } catch (const std::exception&) {
      // Safe: a directory whose links leave the root or loop holds nothing pip would see.
    }
  }
  out.insert(out.end(), resolved.begin(), resolved.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Distribution> target_distributions(const layers::BaseView& view, const PythonTarget& target,
                                               const std::vector<Distribution>& all) {
  std::vector<std::string> dirs = target_site_dirs(view, target);
  std::vector<Distribution> out;
  for (const auto& d : all) {
    if (std::binary_search(dirs.begin(), dirs.end(), parent_dir(d.location))) {
      out.push_back(d);
    }
  }
  return out;
}

std::string purl(const Distribution& d) {
  return "pkg:pypi/" + util::percent_encode(normalize_project_name(d.name)) + "@" + util::percent_encode(d.version);
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
