#pragma once
// The Python distributions installed in an image's file tree (a base, or a base with
// layers on it): what pip would list there, read from the files layers::BaseView keeps
// (nothing is run). The build counts them when it selects wheels, the SBOM lists them,
// `inspect --base-view` shows them.
#include "layers/base_view.hpp"
#include "python/wheel.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace python {

struct Distribution {
  std::string name, version;
  std::string location; // the .dist-info or .egg-info path, e.g. "usr/local/lib/python3.10/dist-packages/x-1.dist-info"
  std::string installer; // INSTALLER's first line ("pip", "debian", ...), empty when absent
  std::vector<std::string> requires_dist;
  bool has_record = false;        // a RECORD file is there (pip uninstalls only what one lists)
  std::vector<std::string> files; // RECORD's paths, relative to the directory holding `location`
  std::string layer;              // the digest of the layer that wrote its metadata last
  bool operator==(const Distribution&) const = default;
};

// Every `*.dist-info` with a METADATA and every `*.egg-info` (a directory with PKG-INFO,
// or the file itself) under a site-packages or dist-packages directory, with a Name
// and a Version; sorted by location.
std::vector<Distribution> installed_distributions(const layers::BaseView& view);

// The site directories the target interpreter reads, as image paths without the
// leading '/', as CPython's site module sets them up (nothing is run): the target's
// site_packages; for a Debian interpreter in /usr/bin, /usr/local/lib/python3.X/
// dist-packages, /usr/lib/python3/dist-packages and /usr/lib/python3.X/dist-packages;
// for one in PREFIX/bin, PREFIX/lib{,64}/python3.X/site-packages; for a venv (a
// pyvenv.cfg in PREFIX), its own site-packages and, with include-system-site-packages
// = true, those of the interpreter its `home` names. `.pth` files are not followed.
std::vector<std::string> target_site_dirs(const layers::BaseView& view, const PythonTarget& target);

// The distributions of `all` (installed_distributions of the same view) that the target
// interpreter sees: those whose .dist-info or .egg-info is directly in one of
// target_site_dirs. Other environments in the image (another venv, a conda
// environment, conda's pkgs/ cache, a site-packages anywhere else) are not pip's
// business when it installs for this interpreter.
std::vector<Distribution> target_distributions(const layers::BaseView& view, const PythonTarget& target,
                                               const std::vector<Distribution>& all);

// pkg:pypi/<PEP 503 name>@<version>, percent-encoded.
std::string purl(const Distribution& d);

// {"name", "version", "location", "installer", "requires_dist", "files", "layer"} per
// distribution (inspect --base-view --json).
nlohmann::json to_json(const std::vector<Distribution>& dists);

} // namespace python
