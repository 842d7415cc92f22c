#include "python/pip_conf.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace python {

namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) {
    out.push_back(w);
  }
  return out;
}

} // namespace

void read_pip_conf(const std::filesystem::path& file, IndexDefaults& d) {
  std::ifstream in(file);
  if (!in) {
    return;
  }
  std::map<std::string, std::map<std::string, std::string>> sections;
  std::string section, key, line;
  while (std::getline(in, line)) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t') && !key.empty()) {
      sections[section][key] += " " + util::trim(line, " \t\r");
      continue;
    }
    line = util::trim(line, " \t\r");
    if (line.empty() || line[0] == '#' || line[0] == ';') {
      continue;
    }
    if (line.front() == '[' && line.back() == ']') {
      section = util::trim(line.substr(1, line.size() - 2), " \t\r");
      key.clear();
      continue;
    }
    auto eq = line.find_first_of("=:");
    if (eq == std::string::npos) {
      continue;
    }
    key = util::trim(line.substr(0, eq), " \t\r");
    std::replace(key.begin(), key.end(), '_', '-');
    sections[section][key] = util::trim(line.substr(eq + 1), " \t\r");
  }
  for (const char* sec : {"global", "install"}) {
    auto it = sections.find(sec);
    if (it == sections.end()) {
      continue;
    }
    const auto& kv = it->second;
    if (auto v = kv.find("index-url"); v != kv.end()) {
      d.index_url = util::trim(v->second, " \t\r");
      d.index_url_from = file.string();
    }
    if (auto v = kv.find("extra-index-url"); v != kv.end()) {
      d.extra_index_urls = split_ws(v->second);
    }
    if (auto v = kv.find("find-links"); v != kv.end()) {
      d.find_links = split_ws(v->second);
    }
  }
}

IndexDefaults index_defaults(const PipEnvironment& env, const std::filesystem::path& root) {
  IndexDefaults d;
  std::string xdg = env.xdg_config_home;
  if (xdg.empty() && !env.home.empty()) {
    xdg = env.home + "/.config";
  }
  auto system = [&](const char* p) { return root.empty() ? std::filesystem::path(p) : root / (p + 1); };
  std::vector<std::filesystem::path> files = {system("/etc/xdg/pip/pip.conf"), system("/etc/pip.conf")};
  if (!env.home.empty()) {
    files.emplace_back(env.home + "/.pip/pip.conf");
  }
  if (!xdg.empty()) {
    files.emplace_back(xdg + "/pip/pip.conf");
  }
  if (env.pip_config_file == "os.devnull" || env.pip_config_file == "/dev/null") {
    files.clear(); // pip: no configuration files at all
  } else if (!env.pip_config_file.empty()) {
    files.emplace_back(env.pip_config_file);
  }
  for (const auto& f : files) {
    read_pip_conf(f, d);
  }
  if (!env.pip_index_url.empty()) {
    d.index_url = env.pip_index_url;
    d.index_url_from = "PIP_INDEX_URL";
  }
  if (!env.pip_extra_index_url.empty()) {
    d.extra_index_urls = split_ws(env.pip_extra_index_url);
  }
  if (!env.pip_find_links.empty()) {
    d.find_links = split_ws(env.pip_find_links);
  }
  if (!env.netrc.empty()) {
    d.netrc = env.netrc;
  } else if (!env.home.empty()) {
    d.netrc = env.home + "/.netrc";
  }
  return d;
}

} // namespace python
