// RUN apt-get install: the packages of the spec's debs layer.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// One `apt-get install` / `apt install` command: its packages, or false for a flag that
// changes what apt trusts or does (--allow-unauthenticated, -t, a .deb path...).
bool Mapper::apt_install(const std::vector<std::string>& seg, std::vector<std::string>& pkgs, bool& recommends) {
  bool no_recommends = false;
  for (std::size_t i = 2; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    if (a == "--no-install-recommends" || a == "-o" || a.rfind("-oAPT::Install-Recommends=", 0) == 0) {
      no_recommends = no_recommends || a == "--no-install-recommends" || a.find("=false") != std::string::npos ||
                      a.find("=0") != std::string::npos;
      if (a == "-o" && i + 1 < seg.size()) {
        const std::string& o = seg[++i];
        if (o.rfind("APT::Install-Recommends=", 0) != 0 && o.rfind("Dpkg::Options::=", 0) != 0) {
          return false;
        }
        no_recommends = no_recommends || o == "APT::Install-Recommends=false" || o == "APT::Install-Recommends=0";
      }
      continue;
    }
    if (a == "-y" || a == "--yes" || a == "-q" || a == "-qq" || a == "--quiet" || a == "--no-install-suggests" ||
        a == "--assume-yes" || a == "-yq" || a == "-qy" || a == "--fix-missing") {
      continue;
    }
    const std::string name = a.substr(0, a.find('='));
    bool name_ok = name.size() >= 2 && a[0] != '-' &&
                   name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-") == std::string::npos &&
                   a.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-=:~ABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
                       std::string::npos;
    if (!name_ok && a.find('$') == std::string::npos) { // a variable is named as such by the caller
      return false;
    }
    pkgs.push_back(a);
  }
  recommends = recommends || !no_recommends;
  return true;
}

// RUN apt-get update && apt-get install -y PKGS && rm -rf /var/lib/apt/lists/*: the
// packages go to the spec's debs layer. False when the RUN does anything else.
bool Mapper::apt_run(const std::vector<std::string>& w, bool vars) {
  std::vector<std::vector<std::string>> segs = segments(w);
  std::vector<std::string> pkgs;
  bool recommends = false;
  for (auto seg : segs) {
    while (!seg.empty() && seg[0].find('=') != std::string::npos && seg[0][0] != '-') {
      seg.erase(seg.begin()); // DEBIAN_FRONTEND=noninteractive
    }
    if (seg.empty()) {
      continue;
    }
    const bool apt = seg[0] == "apt-get" || seg[0] == "apt";
    if (apt && seg.size() >= 2 &&
        (seg[1] == "update" || seg[1] == "clean" || seg[1] == "autoclean" || seg[1] == "autoremove")) {
      continue; // the lock reads the indexes; a layer holds no apt cache
    }
    if (apt && seg.size() >= 2 && seg[1] == "install") {
      if (!apt_install(seg, pkgs, recommends)) {
        return false;
      }
      continue;
    }
    bool cleanup = seg[0] == "rm" && seg.size() >= 2;
    for (std::size_t i = 1; cleanup && i < seg.size(); ++i) {
      const std::string& a = seg[i];
      cleanup = a == "-rf" || a == "-fr" || a == "-r" || a == "-f" || a.rfind("/var/lib/apt/lists", 0) == 0 ||
                a.rfind("/var/cache/apt", 0) == 0 || a.rfind("/tmp/", 0) == 0;
    }
    if (!cleanup) {
      return false;
    }
  }
  if (pkgs.empty()) {
    return false;
  }
  if (vars) {
    skip("installs Debian packages named through a variable ($...), which a spec cannot expand: write the names "
         "in the spec's debs layer");
    return true;
  }
  Layer* debs = nullptr;
  for (auto& l : m.layers) {
    if (l.debs) {
      debs = &l;
    }
  }
  if (debs == nullptr) {
    Layer l;
    l.debs = true;
    l.name = layer_name(m, "system");
    m.layers.insert(m.layers.begin(), l); // system libraries change least: the first layer
    debs = &m.layers.front();
    m_lock_commands.push_back("paddle-image lock --spec spec.yaml --layer " + debs->name);
  }
  for (auto& p : pkgs) {
    if (std::find(debs->packages.begin(), debs->packages.end(), p) == debs->packages.end()) {
      debs->packages.push_back(p);
    }
  }
  debs->recommends = debs->recommends || recommends;
  return true;
}

} // namespace templates::migrate
