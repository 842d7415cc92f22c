#pragma once
// What a wheels layer does to the Python distributions already installed where it
// lands, as pip does: a distribution of the same project at another version is
// uninstalled (every path its RECORD lists, the __pycache__ of its modules, its
// .dist-info, directories left empty) by whiteouts in the new layer; the same version is
// "already satisfied" and not installed again; a distribution pip would not uninstall
// (installed by Debian, or without a RECORD) stays and the new one shadows it. And the
// requirements of the distributions that stay, checked against the versions the layer
// brings (pip's "has requirement X, but you have Y").
#include "layers/base_view.hpp"
#include "python/installed.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace python {

// A wheel the layer is about to install.
struct Incoming {
  std::string name;     // as the wheel's file name spells it
  std::string version;  // the wheel's version
  std::string filename; // the .whl
  std::string where;    // where it was asked for: "requirements.lock:3", or the wheel's path
};

struct Replacement {
  enum class Action {
    replace,   // the old one is removed in the new layer
    shadow,    // the old one stays (pip would not uninstall it); the new one is installed beside it
    satisfied, // the same version is there: the wheel is not installed again
    uninstall, // wheels.uninstall: removed, nothing installed in its place
  };
  Action action = Action::replace;
  std::string name;
  std::string old_version, new_version;
  std::string location; // the old .dist-info / .egg-info, an image path without '/'
  std::string reason;   // shadow: why it stays
  std::string filename; // the incoming wheel
  bool operator==(const Replacement&) const = default;
};

struct InstallPlan {
  std::vector<Replacement> replacements; // in incoming order
  std::set<std::string> skip;            // projects already satisfied (normalised names): not installed
  // Paths (resolved through the view's links, no leading '/') pip would remove, each
  // with the directory below which directories left empty go too (the directory
  // holding the .dist-info).
  std::map<std::string, std::string> removals;
};

// Plans the layer against what is installed where it lands (`installed`: the
// distributions of `landing`). A wheel of a project the view has twice (two versions
// under different site directories) replaces each of them.
// `roots` (image paths, no leading '/'), when given, bound every removal: pip's
// install scheme for the target (its prefix, site directory and scripts directory), so
// a RECORD that climbs out of it ("../../../shadow") never whites out anything else.
InstallPlan plan_install(const layers::BaseView& landing, const std::vector<Distribution>& installed,
                         const std::vector<Incoming>& incoming, const std::vector<std::string>& roots = {});

// A distribution a wheels layer's `uninstall` names (pip uninstall NAME).
struct Uninstall {
  std::string name;
  std::string where; // "spec.yaml:7:18: layer 'slim'"
};

// What pip uninstall does to `names` among `installed` (the distributions of
// `landing` the target sees): every one of the project (two site directories may each
// hold one) planned for removal as a replacement's old files are, bounded by `roots`.
// Error(input) naming `where` for a name nothing installed has, and for a distribution
// pip would not uninstall (Debian's, or one without a RECORD), with the reason.
InstallPlan plan_uninstall(const layers::BaseView& landing, const std::vector<Distribution>& installed,
                           const std::vector<Uninstall>& names, const std::vector<std::string>& roots = {});

// The paths to white out once the layer's own paths (`written`, resolved, no leading
// '/') are known: the plan's removals that the layer does not write again, a directory
// in place of everything under it when nothing is left there, sorted. Never a path the
// layer writes, nor one with something the layer writes below it.
std::vector<std::string> whiteouts(const layers::BaseView& landing, const InstallPlan& plan,
                                   const std::set<std::string>& written);

// The requirements of the distributions that stay (every installed one whose project
// the layer does not install) that the incoming versions break, each as one sentence
// naming both sides. Markers are evaluated in `markers` with no extras asked.
std::vector<std::string> conflicts(const std::vector<Distribution>& installed, const std::vector<Incoming>& incoming,
                                   const std::map<std::string, std::string>& markers);

// "replaces opt-einsum 3.3.0 -> 3.4.0 (/usr/local/lib/.../opt_einsum-3.3.0.dist-info)" and
// the like, for the build's log.
std::string describe(const Replacement& r);
// {"action", "name", "from", "to", "location", "reason", "wheel"}.
nlohmann::json to_json(const Replacement& r);
// The plan's inputs for a layer's cache key: the replacements and the removal paths.
nlohmann::json plan_key(const InstallPlan& plan);

} // namespace python
