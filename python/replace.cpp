#include "python/replace.hpp"

#include "layers/tree.hpp"
#include "python/metadata.hpp"
#include "python/pep440.hpp"
#include "python/requirement.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace python {

namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// `rel` (a RECORD path) joined to `dir` and normalised (layers' one image-path
// normaliser); "" when it leaves the root or is empty. RECORD paths are relative to the
// directory holding the .dist-info; an absolute one (old installers) is an image path.
std::string join_record_path(const std::string& dir, const std::string& rel) {
  std::string full = !rel.empty() && rel[0] == '/' ? rel : "/" + dir + "/" + rel;
  try {
    return layers::normalize_image_path(full, "RECORD");
  } catch (const std::exception&) {
    return {};
  }
}

// The path where the view really has `path` (its directories' links followed), "" when
// the view lacks it or a link leaves the root.
std::string existing(const layers::BaseView& view, const std::string& path) {
  if (path.empty()) {
    return {};
  }
  try {
    std::string real = view.resolve(path, false, nullptr, "/" + path);
    return view.find(real) != nullptr ? real : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

// The prefix of an install scheme's site directory: "usr/local" for
// usr/local/lib/python3.11/dist-packages, "usr" for usr/lib/python3/dist-packages; the
// directory itself when it is laid out otherwise.
std::string scheme_prefix(const std::string& site) {
  std::string lib_python = parent_of(site);
  std::string lib = parent_of(lib_python);
  std::string leaf = name_of(site);
  if ((leaf == "site-packages" || leaf == "dist-packages") && name_of(lib_python).rfind("python", 0) == 0 &&
      (name_of(lib) == "lib" || name_of(lib) == "lib64") && !parent_of(lib).empty()) {
    return parent_of(lib);
  }
  return site;
}

// Why pip would leave `d` alone, "" when it would uninstall it.
std::string kept_because(const Distribution& d) {
  if (d.installer == "debian" || d.location.rfind("usr/lib/python3/dist-packages/", 0) == 0) {
    return "installed by Debian's package manager";
  }
  if (!d.has_record) {
    return "it has no RECORD, so nothing tells what to remove";
  }
  return {};
}

// Every node under `dir` in the view (all depths).
template <typename F> void for_each_below(const layers::BaseView& view, const std::string& dir, F&& f) {
  const auto& nodes = view.nodes();
  for (auto it = nodes.lower_bound(dir + "/"); it != nodes.end() && below(it->first, dir); ++it) {
    f(it->first, it->second);
  }
}

bool same_version(const std::string& a, const std::string& b) {
  return normalize_version(a) == normalize_version(b);
}

// A test for "inside one of `roots`" (every path when there are none).
std::function<bool(const std::string&)> within(const std::vector<std::string>& roots) {
  return [roots](const std::string& path) {
    return roots.empty() || std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
             return !r.empty() && (path == r || below(path, r));
           });
  };
}

// Every path pip removes when it uninstalls `d` (its RECORD's files, their bytecode, the
// .dist-info), into plan.removals: each resolved through the view's links, bounded by
// the install scheme's prefix and `in_roots`.
void add_removals(const layers::BaseView& landing, const Distribution& d,
                  const std::function<bool(const std::string&)>& in_roots, InstallPlan& plan) {
  const std::string dir = parent_of(d.location);
  // What pip's install scheme owns: PREFIX/lib/pythonX.Y/site-packages -> PREFIX
  // (scripts in PREFIX/bin, data in PREFIX/share); a RECORD path outside it (a
  // hostile or broken RECORD naming /etc/passwd) is never removed.
  const std::string prefix = scheme_prefix(dir);
  auto add = [&](const std::string& path) {
    std::string real = existing(landing, path);
    if (!real.empty() && real != dir && !below(dir, real) && below(real, prefix) && in_roots(real)) {
      plan.removals.emplace(real, below(real, dir) ? dir : parent_of(real));
    }
  };
  for (const auto& rel : d.files) {
    std::string path = join_record_path(dir, rel);
    add(path);
    // The bytecode Python wrote for a module (pip removes it with the module).
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0) {
      std::string cache = existing(landing, parent_of(path).empty() ? "__pycache__" : parent_of(path) + "/__pycache__");
      std::string stem = name_of(path).substr(0, name_of(path).size() - 3) + ".";
      if (!cache.empty()) {
        for_each_below(landing, cache, [&](const std::string& p, const layers::ViewNode&) {
          std::string n = name_of(p);
          if (parent_of(p) == cache && n.rfind(stem, 0) == 0 && n.size() > 4 &&
              n.compare(n.size() - 4, 4, ".pyc") == 0) {
            add(p);
          }
        });
      }
    }
  }
  add(d.location);
}

} // namespace

InstallPlan plan_install(const layers::BaseView& landing, const std::vector<Distribution>& installed,
                         const std::vector<Incoming>& incoming, const std::vector<std::string>& roots) {
  const auto in_roots = within(roots);
  InstallPlan plan;
  for (const auto& in : incoming) {
    std::string key = normalize_project_name(in.name);
    std::vector<const Distribution*> olds;
    for (const auto& d : installed) {
      if (normalize_project_name(d.name) == key) {
        olds.push_back(&d);
      }
    }
    // The same version anywhere: pip's "Requirement already satisfied".
    auto same = std::find_if(olds.begin(), olds.end(),
                             [&](const Distribution* d) { return same_version(d->version, in.version); });
    if (same != olds.end()) {
      const Distribution& d = **same;
      plan.replacements.push_back(
          {Replacement::Action::satisfied, d.name, d.version, in.version, d.location, {}, in.filename});
      plan.skip.insert(key);
      continue;
    }
    for (const Distribution* dp : olds) {
      const Distribution& d = *dp;
      Replacement r{Replacement::Action::replace, d.name, d.version, in.version, d.location, {}, in.filename};
      r.reason = kept_because(d);
      if (!r.reason.empty()) {
        r.action = Replacement::Action::shadow;
        plan.replacements.push_back(r);
        continue;
      }
      plan.replacements.push_back(r);
      add_removals(landing, d, in_roots, plan);
    }
  }
  return plan;
}

InstallPlan plan_uninstall(const layers::BaseView& landing, const std::vector<Distribution>& installed,
                           const std::vector<Uninstall>& names, const std::vector<std::string>& roots) {
  const auto in_roots = within(roots);
  InstallPlan plan;
  for (const auto& u : names) {
    const std::string key = normalize_project_name(u.name);
    std::vector<const Distribution*> found;
    for (const auto& d : installed) {
      if (normalize_project_name(d.name) == key) {
        found.push_back(&d);
      }
    }
    if (found.empty()) {
      throw util::Error(util::ErrorKind::input,
                        u.where + " uninstalls " + u.name + ", which is not installed where the layer lands",
                        "check the name (pip list in the base), or drop it from wheels.uninstall");
    }
    for (const Distribution* d : found) {
      if (std::string why = kept_because(*d); !why.empty()) {
        throw util::Error(util::ErrorKind::input,
                          u.where + " uninstalls " + d->name + " " + d->version + " at /" + d->location +
                              ", which pip cannot uninstall: " + why,
                          "use a base without it, or shadow it by installing another version in a wheels layer");
      }
      plan.replacements.push_back({Replacement::Action::uninstall, d->name, d->version, {}, d->location, {}, {}});
      add_removals(landing, *d, in_roots, plan);
    }
  }
  return plan;
}

std::vector<std::string> whiteouts(const layers::BaseView& landing, const InstallPlan& plan,
                                   const std::set<std::string>& written) {
  auto writes_at_or_below = [&](const std::string& p) {
    if (written.count(p)) {
      return true;
    }
    auto it = written.lower_bound(p + "/");
    return it != written.end() && below(*it, p);
  };
  std::set<std::string> removed;
  // A directory with something the layer writes below it loses only what is not written.
  std::function<void(const std::string&)> remove = [&](const std::string& p) {
    if (written.count(p)) {
      return;
    }
    const layers::ViewNode* n = landing.find(p);
    if (n != nullptr && n->type == '5' && writes_at_or_below(p)) {
      for_each_below(landing, p, [&](const std::string& c, const layers::ViewNode&) {
        if (parent_of(c) == p) {
          remove(c);
        }
      });
      return;
    }
    removed.insert(p);
  };
  std::map<std::string, std::string> limit; // removed path -> the directory it may empty up to
  for (const auto& [p, lim] : plan.removals) {
    remove(p);
  }
  for (const auto& [p, lim] : plan.removals) {
    for (auto it = removed.lower_bound(p); it != removed.end() && (*it == p || below(*it, p)); ++it) {
      limit.emplace(*it, lim);
    }
  }
  auto covered = [&](const std::string& p) {
    for (std::string a = p; !a.empty(); a = parent_of(a)) {
      if (removed.count(a)) {
        return true;
      }
    }
    return false;
  };
  // Directories left empty, deepest first, never the limit itself or above it.
  std::map<std::string, std::string, std::greater<>> dirs;
  for (const auto& [p, lim] : limit) {
    for (std::string d = parent_of(p); below(d, lim); d = parent_of(d)) {
      dirs.emplace(d, lim);
    }
  }
  std::vector<std::pair<std::string, std::string>> by_depth(dirs.begin(), dirs.end());
  std::stable_sort(by_depth.begin(), by_depth.end(), [](const auto& a, const auto& b) {
    return std::count(a.first.begin(), a.first.end(), '/') > std::count(b.first.begin(), b.first.end(), '/');
  });
  for (const auto& [d, lim] : by_depth) {
    if (removed.count(d) || writes_at_or_below(d) || landing.find(d) == nullptr) {
      continue;
    }
    bool empty = true;
    for_each_below(landing, d, [&](const std::string& c, const layers::ViewNode&) {
      if (empty && !covered(c)) {
        empty = false;
      }
    });
    if (empty) {
      removed.insert(d);
    }
  }
  std::vector<std::string> out;
  for (const auto& p : removed) {
    bool under_removed = false;
    for (std::string a = parent_of(p); !a.empty(); a = parent_of(a)) {
      if (removed.count(a)) {
        under_removed = true;
        break;
      }
    }
    if (!under_removed) {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<std::string> conflicts(const std::vector<Distribution>& installed, const std::vector<Incoming>& incoming,
                                   const std::map<std::string, std::string>& markers) {
  std::map<std::string, const Incoming*> by_name;
  for (const auto& in : incoming) {
    by_name.emplace(normalize_project_name(in.name), &in);
  }
  std::vector<std::string> out;
  for (const auto& d : installed) {
    if (by_name.count(normalize_project_name(d.name))) {
      continue; // replaced, shadowed or kept as it is
    }
    for (const auto& text : d.requires_dist) {
      Requirement r;
      try {
        r = Requirement::parse(text);
        if (r.marker && !r.marker->evaluate(markers, {})) {
          continue;
        }
      } catch (const std::invalid_argument&) {
        continue; // a malformed requirement of an installed distribution constrains nothing pip could check
      }
      auto it = by_name.find(r.key);
      if (it == by_name.end()) {
        continue;
      }
      auto v = pep440::Version::parse(it->second->version);
      bool ok = false;
      try {
        ok = v && r.specifier.contains(*v, true);
      } catch (const std::invalid_argument&) {
        ok = false;
      }
      if (!ok) {
        out.push_back(d.name + " " + d.version + " (/" + d.location + ") requires '" + text + "', but " +
                      it->second->where + " installs " + it->second->name + " " + it->second->version);
      }
    }
  }
  return out;
}

std::string describe(const Replacement& r) {
  switch (r.action) {
  case Replacement::Action::replace:
    return "replaces " + r.name + " " + r.old_version + " -> " + r.new_version + " (removes /" + r.location +
           " and the files its RECORD lists)";
  case Replacement::Action::shadow:
    return "installs " + r.name + " " + r.new_version + " beside " + r.old_version + " at /" + r.location +
           ", which stays: " + r.reason;
  case Replacement::Action::uninstall:
    return "uninstalls " + r.name + " " + r.old_version + " (removes /" + r.location +
           " and the files its RECORD lists)";
  case Replacement::Action::satisfied:
    return r.name + " " + r.new_version + " is already satisfied by /" + r.location + ": " + r.filename +
           " is not installed";
  }
  return {};
}

nlohmann::json to_json(const Replacement& r) {
  static const char* const k_actions[] = {"replace", "shadow", "satisfied", "uninstall"};
  nlohmann::json j = {{"action", k_actions[static_cast<int>(r.action)]},
                      {"name", r.name},
                      {"from", r.old_version},
                      {"to", r.new_version},
                      {"location", "/" + r.location},
                      {"wheel", r.filename}};
  if (!r.reason.empty()) {
    j["reason"] = r.reason;
  }
  return j;
}

nlohmann::json plan_key(const InstallPlan& plan) {
  nlohmann::json j = {{"replacements", nlohmann::json::array()}, {"removals", plan.removals}};
  for (const auto& r : plan.replacements) {
    j["replacements"].push_back(to_json(r));
  }
  return j;
}

} // namespace python
