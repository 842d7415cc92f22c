// RUN mkdir, chmod and ln -s: directory and symlink rules, and modes.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// `ln -s[f][n] TARGET LINK` (LINK ending in '/' or naming no file: LINK/basename of
// TARGET is what ln makes when LINK ends in '/'): a symlink rule. nullopt for a hard
// link or several targets.
std::optional<Copy> Mapper::link_command(const std::vector<std::string>& seg, const std::string& cwd) {
  std::vector<std::string> pos;
  bool soft = false;
  for (std::size_t i = 1; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find_first_not_of("-sfnvT") == std::string::npos) {
      soft = soft || a.find('s') != std::string::npos;
    } else if (a == "--symbolic" || a == "--force" || a == "--no-dereference") {
      soft = soft || a == "--symbolic";
    } else if (a[0] == '-') {
      return std::nullopt;
    } else {
      pos.push_back(a);
    }
  }
  if (!soft || pos.size() != 2 || pos[0].empty() || pos[1].empty()) {
    return std::nullopt;
  }
  std::string link = join_path(cwd, pos[1]);
  if (link.back() == '/') {
    std::string t = pos[0];
    while (t.size() > 1 && t.back() == '/') {
      t.pop_back();
    }
    link += t.substr(t.find_last_of('/') + 1);
  }
  if (link == "/") {
    return std::nullopt;
  }
  Copy c;
  c.symlink = pos[0];
  c.to = link;
  return c;
}

// The files layer the Dockerfile's symlinks and directories go to (one, made by the
// first of them: "links" or "dirs").
Layer& Mapper::links_layer(const char* name) {
  for (auto& l : m.layers) {
    if (!l.copies.empty() && std::all_of(l.copies.begin(), l.copies.end(),
                                         [](const Copy& c) { return !c.symlink.empty() || c.directory; })) {
      return l;
    }
  }
  Layer l;
  l.name = layer_name(m, name);
  m.layers.push_back(l);
  return m.layers.back();
}

// `mkdir [-p] [-m MODE] DIR...`: a directory rule per DIR (its parents come with it, as
// -p makes them; without -p a missing parent fails in Docker, which the build did not).
// Nothing (nullopt) for an option it does not know or a mode that is not octal.
std::optional<std::vector<Copy>> Mapper::mkdir_command(const std::vector<std::string>& seg, const std::string& cwd) {
  std::string mode;
  std::vector<Copy> out;
  bool options = true;
  for (std::size_t i = 1; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    if (options && a == "--") {
      options = false;
    } else if (options &&
               (a == "-p" || a == "--parents" || a == "-v" || a == "--verbose" || a == "-pv" || a == "-vp")) {
      continue;
    } else if (options && (a == "-m" || a == "--mode") && i + 1 < seg.size()) {
      mode = seg[++i];
    } else if (options && (a.rfind("--mode=", 0) == 0 || (a.rfind("-m", 0) == 0 && a.size() > 2))) {
      mode = a.substr(a[1] == '-' ? 7 : 2);
    } else if (options && a.size() > 1 && a[0] == '-') {
      return std::nullopt;
    } else {
      Copy c;
      c.directory = true;
      c.to = join_path(cwd, a);
      while (c.to.size() > 1 && c.to.back() == '/') {
        c.to.pop_back();
      }
      if (c.to == "/") {
        continue;
      }
      out.push_back(c);
    }
  }
  if (!mode.empty() && (mode.size() > 4 || mode.find_first_not_of("01234567") != std::string::npos)) {
    return std::nullopt; // a symbolic mode (u+rwx)
  }
  if (out.empty()) {
    return std::nullopt;
  }
  for (auto& c : out) {
    c.mode = mode;
  }
  return out;
}

// `chmod MODE PATH...` of files this stage's copy rules put there, or of directories
// its mkdir made (this RUN's `made` among them): the rules' mode. False (nothing
// changed) when a path is not exactly a copied file's or a made directory's.
bool Mapper::chmod_of_copies(const std::vector<std::string>& seg, const std::string& cwd, std::vector<Copy>& made) {
  if (seg.size() < 3 || seg[1].rfind("-", 0) == 0) {
    return false;
  }
  std::string mode;
  if (seg[1] == "+x" || seg[1] == "a+x" || seg[1] == "755" || seg[1] == "0755") {
    mode = "0755";
  } else if (seg[1].find_first_not_of("01234567") == std::string::npos && seg[1].size() >= 3 && seg[1].size() <= 4) {
    mode = seg[1];
  } else {
    return false;
  }
  std::vector<Copy*> hits;
  for (std::size_t i = 2; i < seg.size(); ++i) {
    std::string path = join_path(cwd, seg[i]);
    std::string dir = path;
    while (dir.size() > 1 && dir.back() == '/') {
      dir.pop_back();
    }
    Copy* hit = nullptr;
    auto match = [&](Copy& c) {
      bool file = !c.from.empty() && c.from.back() != '/' && c.url.empty() && c.git.empty();
      std::string name = c.from.substr(c.from.rfind('/') + 1);
      std::string lands = !c.to.empty() && c.to.back() == '/' ? c.to + name : c.to;
      if ((file && lands == path) || (c.directory && c.to == dir)) {
        hit = &c;
      }
    };
    for (auto& l : m.layers) {
      std::for_each(l.copies.begin(), l.copies.end(), match);
    }
    std::for_each(made.begin(), made.end(), match);
    if (hit == nullptr) {
      return false;
    }
    hits.push_back(hit);
  }
  for (Copy* c : hits) {
    c->mode = mode;
  }
  return true;
}

} // namespace templates::migrate
