// The wheels layer: wheels from a directory (checked against a lock file) or fetched
// from a package index by a lock, installed for the base's Python target as pip would,
// replacing what the base has of the same projects (python/replace), or the base's
// distributions uninstalled (wheels.uninstall); keyed and cached like every layer
// (layer_build.hpp).
#include "builder/layer_kind.hpp"
#include "python/installed.hpp"
#include "python/pep440.hpp"
#include "python/replace.hpp"
#include "python/requirements.hpp"
#include "python/wheel.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> list_wheels(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".whl") {
      out.push_back(it->path());
    }
  }
  if (ec) {
    throw Error(ErrorKind::io, "cannot list the wheels in " + dir.string() + ": " + ec.message());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One wheel per project, and with a lock file exactly the locked versions and hashes
// (a locked line with an environment marker may have no wheel: it can be for another
// target).
void check_lock(const spec::LayerSpec& l, const python::WheelInventory& inventory) {
  std::map<std::string, const python::RequirementLine*> lock;
  python::RequirementsFile file;
  if (l.wheels().lock_file) {
    file = python::parse_requirements(*l.wheels().lock_file, python::RequirementsMode::lock);
    if (!file.first_index_option.empty()) {
      // The layer installs a directory: an index named in the lock would not be used,
      // and ignoring it would hide where the wheels really come from.
      throw Error(ErrorKind::input,
                  file.first_index_option + " names a package index, but layer '" + l.name +
                      "' installs the wheels in " + l.wheels().dir.string(),
                  "drop 'dir' from the layer to fetch the locked wheels from the index, or remove the line");
    }
    for (const auto& r : file.requirements) {
      lock[r.requirement.key] = &r;
    }
  }
  std::set<std::string> seen;
  for (const auto& w : inventory.wheels) {
    std::string name = python::normalize_project_name(w.name);
    if (!seen.insert(name).second) {
      throw Error(ErrorKind::input, l.origin + ": layer '" + l.name + "' has two wheels of project '" + name + "'",
                  "keep one version per project in " + l.wheels().dir.string());
    }
    if (!l.wheels().lock_file) {
      continue;
    }
    auto it = lock.find(name);
    if (it == lock.end()) {
      throw Error(ErrorKind::input,
                  "wheel " + w.filename + " is not in the lock file " + l.wheels().lock_file->string(),
                  "add it (name==version --hash=sha256:...) or remove the wheel");
    }
    const python::RequirementLine& e = *it->second;
    if (python::normalize_version(e.pinned()) != python::normalize_version(w.version)) {
      throw Error(ErrorKind::input,
                  e.where() + ": " + name + " is locked at " + e.pinned() + " but the wheel is " + w.version,
                  "update the lock file or use the locked wheel");
    }
    if (std::find(e.sha256.begin(), e.sha256.end(), w.sha256) == e.sha256.end()) {
      throw Error(ErrorKind::integrity,
                  e.where() + ": sha256 of " + w.filename + " (" + w.sha256 + ") does not match the lock file",
                  "the wheel changed; verify where it came from, then update the lock");
    }
  }
  for (const auto& [name, e] : lock) {
    if (seen.count(name) == 0 && !e->requirement.marker) {
      throw Error(ErrorKind::input,
                  e->where() + ": " + name + "==" + e->pinned() + " is locked but has no wheel in " +
                      l.wheels().dir.string(),
                  "add the wheel or remove the line");
    }
  }
}

// The Python target and the layer owner as parts of a wheels layer's key.
nlohmann::json target_key(const python::PythonTarget& t) {
  return {t.major,
          t.minor,
          t.arch,
          t.glibc ? t.glibc->first : -1,
          t.glibc ? t.glibc->second : -1,
          t.interpreter,
          t.site_packages,
          t.scripts_dir,
          t.prefix};
}
nlohmann::json owner_key(const spec::LayerSpec& l) {
  layers::Owner owner = to_owner(l.owner);
  return {owner.uid, owner.gid, owner.uname, owner.gname};
}

// A wheels layer's inputs: the Python target, the owner, the lock file and the stat
// data of each .whl (`checks` receives the racily clean wheels, whose stat data cannot
// vouch for their bytes), or with `portable` their contents.
std::string wheels_key(const spec::LayerSpec& l, const python::PythonTarget& t, const std::vector<fs::path>& wheels,
                       const layers::CompressOptions& co, const BuildOptions& o, const nlohmann::json& base_roots,
                       const python::InstallPlan& plan, bool portable, layers::ContentChecks* checks) {
  const std::int64_t start_ns = layers::wall_clock_ns();
  KeyHasher key;
  start_layer_key(key, co, o);
  key.add({{"kind", "wheels"},
           {"target", target_key(t)},
           {"owner", owner_key(l)},
           {"lock", l.wheels().lock_file ? util::sha256_file_hex(*l.wheels().lock_file) : ""},
           {"base_roots", base_roots}});
  if (!plan.replacements.empty()) {
    key.add({{"replacing", python::plan_key(plan)}});
  }
  layers::EntrySet stat_set;
  for (const auto& w : wheels) {
    stat_set.add(layers::CopyRule{w, "/w/", {}, {}, {}, {}, false, l.origin, {}, {}, {}, false});
  }
  if (portable) { // the registry cache's key: the wheels' names and contents
    key.add({{"contents", true}});
    add_entry_contents_to_key(key, stat_set, o.threads);
  } else {
    add_entries_to_key(key, stat_set);
  }
  if (checks != nullptr) {
    *checks = content_checks(stat_set, start_ns, o.threads);
  }
  return key.finish();
}

// Installs every wheel into the staging tree, in file-name order.
python::WheelInventory install_wheels(const spec::LayerSpec& l, const std::vector<fs::path>& wheels,
                                      const python::PythonTarget& t, const fs::path& staging) {
  python::WheelInventory inventory;
  std::map<std::string, std::string> owners;
  for (const auto& w : wheels) {
    inventory.wheels.push_back(util::with_context(l.origin + ": layer '" + l.name + "'",
                                                  [&] { return python::install_wheel(w, t, staging, owners); }));
  }
  return inventory;
}

// The staging tree as layer entries: the layer's owner applies to what the wheels
// install; the install roots and their ancestors (usr/, usr/local/lib/...) stay root's.
layers::EntrySet staged_entries(const spec::LayerSpec& l, const python::PythonTarget& t, const fs::path& staging) {
  layers::EntrySet set;
  set.add(layers::CopyRule{staging, "/", {}, {}, {}, to_owner(l.owner), false, l.origin, {}, {}, {}, false});
  for (const auto& root : {t.site_packages, t.scripts_dir, t.prefix}) {
    std::string p = layers::normalize_image_path(root, l.origin);
    while (!p.empty()) {
      set.set_owner(p, layers::Owner{});
      p = p.find('/') == std::string::npos ? "" : p.substr(0, p.rfind('/'));
    }
  }
  set.finalize(layers::Owner{});
  return set;
}

// The base entries a wheels layer lands on (its install roots and their ancestors, and
// the links on the way), for its cache key: a base that changes them rebuilds it.
nlohmann::json base_roots_key(const layers::BaseView& view, const python::PythonTarget& t, const spec::LayerSpec& l) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& root : {t.site_packages, t.scripts_dir, t.prefix}) {
    std::vector<std::string> links;
    std::string p = view.resolve(layers::normalize_image_path(root, l.origin), true, &links, l.origin);
    nlohmann::json dirs = nlohmann::json::array();
    for (std::string a = p; !a.empty(); a = a.find('/') == std::string::npos ? "" : a.substr(0, a.rfind('/'))) {
      const layers::ViewNode* n = view.find(a);
      dirs.push_back(n == nullptr
                         ? nlohmann::json(nullptr)
                         : nlohmann::json::array({a, std::string(1, n->type), n->mode, n->owner.uid, n->owner.gid,
                                                  n->owner.uname.str(), n->owner.gname.str(), n->xattrs}));
    }
    j.push_back({root, p, links, dirs});
  }
  return j;
}

} // namespace

namespace {

// A wheels layer from a package index: keyed by the parsed lock (requirements and
// hashes, includes followed), the sources, the target and the base (whose Python
// packages the closure check counts); so an unchanged lock costs no request at all.
std::string index_wheels_key(const spec::LayerSpec& l, const python::PythonTarget& t, const python::LockedLayer& locked,
                             const LayerContext& cx, const python::InstallPlan& plan) {
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  nlohmann::json reqs = nlohmann::json::array();
  for (const auto& r : locked.lock.requirements) {
    reqs.push_back({r.text, r.sha256});
  }
  key.add({{"kind", "wheels-index"},
           {"target", target_key(t)},
           {"owner", owner_key(l)},
           {"requirements", reqs},
           {"sources", locked.sources.redacted()},
           {"base", cx.base.digest ? cx.base.digest->str() : ""},
           {"base_roots", base_roots_key(cx.landing, t, l)}});
  if (!plan.replacements.empty()) {
    key.add({{"replacing", python::plan_key(plan)}});
  }
  return key.finish();
}

// A whiteout in `set` for each path of the plan's removals it does not write again, its
// directories taking the base's metadata.
void add_whiteouts(const spec::LayerSpec& l, const LayerContext& cx, const python::InstallPlan& plan,
                   layers::EntrySet& set, const std::string& what) {
  std::set<std::string> written;
  for (const auto& [path, e] : set.entries()) {
    written.insert(path);
  }
  auto outs = python::whiteouts(cx.landing, plan, written);
  auto entries = set.take_entries(); // moved, not copied: given back below
  for (const auto& path : outs) {
    layers::Entry e;
    auto slash = path.rfind('/');
    e.path = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + ".wh." +
             path.substr(slash == std::string::npos ? 0 : slash + 1);
    e.type = layers::Entry::Type::file;
    e.mode = 0644;
    entries[e.path] = e;
  }
  set.replace_entries(std::move(entries));
  set.add_missing_parents(layers::Owner{});
  tell_links(land_on_base(set, cx, l), cx.events); // the whiteouts' directories take the base's metadata
  cx.events.info("  " + std::to_string(outs.size()) + " whiteout(s) remove what " + what);
}

// Installs the wheels into a staging tree and writes it as the layer, with a whiteout
// for every path of a replaced distribution the wheels do not write again; `check`
// sees every wheel first (those already satisfied too, which are not installed).
layers::BlobInfo stage_wheels(const spec::LayerSpec& l, const python::PythonTarget& t, const LayerContext& cx,
                              const std::vector<fs::path>& all_wheels, const python::InstallPlan& plan,
                              util::AtomicFile& tmp, layers::LayerRecord& rec,
                              const std::function<void(const python::WheelInventory&)>& check) {
  std::vector<fs::path> wheels;
  python::WheelInventory skipped;
  for (const auto& w : all_wheels) {
    std::string fname = w.filename().string();
    python::WheelName n = python::WheelName::parse(fname);
    if (plan.skip.count(python::normalize_project_name(n.distribution))) {
      skipped.wheels.push_back(python::InstalledWheel{n.distribution, n.version, fname, util::sha256_file_hex(w), 0});
    } else {
      wheels.push_back(w);
    }
  }
  cx.events.info("  installing " + std::to_string(wheels.size()) + " wheel(s) for " + t.describe() + " into " +
                 t.site_packages);
  util::TempDir staging(cx.cache.layout().staging());
  python::WheelInventory inventory = install_wheels(l, wheels, t, staging.path());
  python::WheelInventory all = inventory;
  all.wheels.insert(all.wheels.end(), skipped.wheels.begin(), skipped.wheels.end());
  check(all);
  layers::EntrySet set = staged_entries(l, t, staging.path());
  tell_links(land_on_base(set, cx, l), cx.events);
  if (!plan.removals.empty()) {
    add_whiteouts(l, cx, plan, set, "the replaced distributions left");
  }
  rec.wheels = python::to_json(inventory);
  rec.tree = layers::entry_tree(set);
  rec.entries = set.entries().size();
  return write_layer(set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
}

// Where a wheels layer may remove files (pip's install scheme for the target): its
// prefix, site directories and scripts directory, as image paths without '/'.
std::vector<std::string> target_roots(const python::PythonTarget& t) {
  auto strip = [](std::string p) {
    while (!p.empty() && p.front() == '/') {
      p.erase(0, 1);
    }
    return p;
  };
  std::vector<std::string> roots = {strip(t.prefix), strip(t.site_packages), strip(t.scripts_dir)};
  std::string bin = fs::path("/" + strip(t.interpreter)).parent_path().string();
  std::string prefix = fs::path(bin).parent_path().string();
  if (bin == "/usr/bin") {
    roots.push_back("usr/lib/python3/dist-packages"); // Debian's own, shadowed not removed (kept_because)
    roots.push_back("usr/lib/python3." + std::to_string(t.minor) + "/dist-packages");
  } else if (!strip(prefix).empty()) {
    roots.push_back(strip(prefix)); // a venv's or another prefix's own scheme
  }
  return roots;
}

// What a wheels layer does to what is installed where it lands (replacements, shadows,
// wheels already satisfied), after the conflict check: a requirement of a distribution
// that stays, broken by a version the layer brings, is an error unless the layer
// allows conflicts. A project another wheels layer of the spec installs is refused.
python::InstallPlan plan_wheels(const spec::LayerSpec& l, const python::TargetFacts& facts, const LayerContext& cx,
                                const std::vector<python::Incoming>& incoming, const std::vector<LayerWheel>& earlier,
                                LayerReport& r) {
  const std::string where = l.origin + ": layer '" + l.name + "'";
  for (const auto& in : incoming) {
    for (const auto& w : earlier) {
      if (python::normalize_project_name(w.wheel.name) == python::normalize_project_name(in.name)) {
        throw Error(ErrorKind::input,
                    where + " installs " + in.name + " " + in.version + ", which layer '" + w.layer +
                        "' of this spec installs too (" + w.wheel.version + ")",
                    "install each project in one wheels layer");
      }
    }
  }
  // Only the target interpreter's environment: what pip would see (another venv, a
  // conda environment or its pkgs/ cache in the base is not touched nor counted).
  auto installed = python::target_distributions(cx.landing, facts.target, python::installed_distributions(cx.landing));
  auto broken = python::conflicts(installed, incoming, facts.markers);
  if (!broken.empty()) {
    std::string list;
    for (const auto& b : broken) {
      list += "\n  - " + b;
    }
    if (!l.wheels().allow_conflicts) {
      throw Error(ErrorKind::incompatible,
                  where + " breaks a requirement of what stays installed (pip check would fail in the image):" + list,
                  "pin a version that satisfies it in the layer's lock or wheels, or set wheels.allow_conflicts: "
                  "true on layer '" +
                      l.name + "' to install it anyway");
    }
    cx.events.info("  warning: allowed by wheels.allow_conflicts, the layer breaks a requirement:" + list);
  }
  python::InstallPlan plan = python::plan_install(cx.landing, installed, incoming, target_roots(facts.target));
  for (const auto& rep : plan.replacements) {
    cx.events.info("  " + python::describe(rep));
  }
  r.replacements = plan.replacements;
  return plan;
}

// What a wheels layer (built or reused) reports: its entries and installed wheels.
void report_wheels(const spec::LayerSpec& l, const layers::LayerRecord& record, LayerReport& r,
                   std::vector<LayerWheel>& wheels_out) {
  r.entries = record.entries.value_or(0);
  if (record.wheels) {
    for (const auto& w : python::wheel_inventory_from_json(*record.wheels).wheels) {
      wheels_out.push_back(LayerWheel{l.name, w});
    }
  }
}

layers::BlobInfo build_index_wheels_layer(const spec::LayerSpec& l, const python::PythonTarget& t,
                                          const LayerContext& cx, LayerReport& r, std::vector<LayerWheel>& wheels_out) {
  const std::string where = l.origin + ": layer '" + l.name + "'";
  python::LockedLayerInput in{*l.wheels().lock_file, l.wheels().lock_origin, l.name, l.wheels().indexes,
                              l.wheels().find_links};
  python::LockedLayer locked =
      util::with_context(where, [&] { return python::open_locked_layer(in, cx.options.index.defaults); });
  // The target's facts, read once: the plan's markers here, the selection's when the
  // layer is built (whose warning about the Python version is printed then).
  python::TargetFacts facts = base_target_facts(cx.base, t);
  std::vector<python::Incoming> incoming;
  for (const auto& line : locked.lock.requirements) {
    if (!line.requirement.marker || line.requirement.marker->evaluate(facts.markers, {})) {
      incoming.push_back(python::Incoming{line.requirement.name, line.pinned(), "", line.where()});
    }
  }
  python::InstallPlan plan = plan_wheels(l, facts, cx, incoming, wheels_out, r);
  std::string key = index_wheels_key(l, t, locked, cx, plan);
  layers::LayerRecord record;
  layers::Found found = layers::Found::built;
  layers::BlobInfo blob = cx.cache.get_or_build(
      key, [&] { return key; }, // made from the lock's hashes and the indexes: portable as it is
      [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
        warn_if_no_dpkg_python(cx.base, t, cx.events);
        util::with_context(where, [&] {
          python::fetch_locked_layer(locked, facts, cx.options.index, cx.cache, std::max(1, cx.options.threads),
                                     cx.events.info,
                                     [&](const std::string& file, std::int64_t done, std::int64_t total) {
                                       cx.events.progress(file, done, total);
                                     });
        });
        cx.events.info("  wheels: " + std::to_string(locked.stats.downloaded) + " downloaded (" +
                       std::to_string(locked.stats.bytes) + " bytes), " + std::to_string(locked.stats.cached) +
                       " from the cache");
        // The installer reads wheels by their own names: links to the cache blobs.
        util::TempDir links(cx.cache.layout().staging(), "wheels-");
        std::vector<fs::path> wheels;
        for (const auto& w : locked.wheels) {
          fs::path link = links.path() / w.selected.file.filename;
          fs::create_symlink(fs::absolute(w.path), link);
          wheels.push_back(link);
        }
        std::sort(wheels.begin(), wheels.end());
        return stage_wheels(l, t, cx, wheels, plan, tmp, rec, [](const python::WheelInventory&) {});
      },
      found, record);
  note_found(cx, found, blob, r);
  report_wheels(l, record, r, wheels_out);
  cx.tree_out = record.tree.value_or(nlohmann::json::array());
  return blob;
}

// wheels.uninstall: a layer of whiteouts only, removing the named distributions from
// what it lands on as pip uninstall does; keyed by the target and the plan (the paths it
// removes), so a base that changes them rebuilds it.
layers::BlobInfo build_uninstall_layer(const spec::LayerSpec& l, const python::PythonTarget& t, const LayerContext& cx,
                                       LayerReport& r) {
  const std::string where = l.wheels().uninstall_origin + ": layer '" + l.name + "'";
  std::vector<python::Uninstall> names;
  for (const auto& n : l.wheels().uninstall) {
    for (const auto& w : cx.wheels_out) {
      if (python::normalize_project_name(w.wheel.name) == python::normalize_project_name(n)) {
        throw Error(ErrorKind::input,
                    where + " uninstalls " + n + ", which layer '" + w.layer + "' of this spec installs (" +
                        w.wheel.version + "): an uninstall removes what the base has",
                    "leave it out of layer '" + w.layer + "' instead (for a dependency another package pulls in, " +
                        "install that package with --no-deps from a lock that omits it)");
      }
    }
    names.push_back(python::Uninstall{n, where});
  }
  auto installed = python::target_distributions(cx.landing, t, python::installed_distributions(cx.landing));
  python::InstallPlan plan = python::plan_uninstall(cx.landing, installed, names, target_roots(t));
  for (const auto& rep : plan.replacements) {
    cx.events.info("  " + python::describe(rep));
  }
  r.replacements = plan.replacements;
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  key.add({{"kind", "wheels-uninstall"},
           {"target", target_key(t)},
           {"owner", owner_key(l)},
           {"names", l.wheels().uninstall},
           {"base_roots", base_roots_key(cx.landing, t, l)},
           {"plan", python::plan_key(plan)}});
  const std::string k = key.finish();
  layers::LayerRecord record;
  layers::Found found = layers::Found::built;
  layers::BlobInfo blob = cx.cache.get_or_build(
      k, [&] { return k; }, // made of names and base paths only: portable as it is
      [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
        layers::EntrySet set;
        set.finalize(layers::Owner{});
        add_whiteouts(l, cx, plan, set, "the uninstalled distributions had");
        rec.wheels = python::to_json(python::WheelInventory{});
        rec.tree = layers::entry_tree(set);
        rec.entries = set.entries().size();
        return write_layer(set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
      },
      found, record);
  note_found(cx, found, blob, r);
  r.entries = record.entries.value_or(0);
  cx.tree_out = record.tree.value_or(nlohmann::json::array());
  return blob;
}

// A wheels layer from a directory of wheels or a package index.
layers::BlobInfo build_wheels_layer(const spec::LayerSpec& l, const python::PythonTarget& t, const LayerContext& cx,
                                    LayerReport& r, std::vector<LayerWheel>& wheels_out) {
  if (l.wheels().uninstalls()) {
    return build_uninstall_layer(l, t, cx, r);
  }
  if (l.from_index()) {
    return build_index_wheels_layer(l, t, cx, r, wheels_out);
  }
  auto wheels = list_wheels(l.wheels().dir);
  if (wheels.empty()) {
    throw Error(ErrorKind::input, l.origin + ": layer '" + l.name + "': no .whl files in " + l.wheels().dir.string());
  }
  std::vector<python::Incoming> incoming;
  for (const auto& w : wheels) {
    python::WheelName n = python::WheelName::parse(w.filename().string());
    incoming.push_back(python::Incoming{n.distribution, n.version, w.filename().string(), w.string()});
  }
  python::InstallPlan plan = plan_wheels(l, base_target_facts(cx.base, t), cx, incoming, wheels_out, r);
  nlohmann::json roots = base_roots_key(cx.landing, t, l);
  layers::ContentChecks checks;
  std::string key = wheels_key(l, t, wheels, cx.compress, cx.options, roots, plan, false, &checks);
  layers::LayerRecord record;
  layers::Found found = layers::Found::built;
  layers::BlobInfo blob = cx.cache.get_or_build(
      key, [&] { return wheels_key(l, t, wheels, cx.compress, cx.options, roots, plan, true, nullptr); },
      [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
        return stage_wheels(l, t, cx, wheels, plan, tmp, rec,
                            [&](const python::WheelInventory& inventory) { check_lock(l, inventory); });
      },
      found, record, &checks);
  note_found(cx, found, blob, r);
  report_wheels(l, record, r, wheels_out);
  cx.tree_out = record.tree.value_or(nlohmann::json::array());
  return blob;
}

class WheelsLayerKind : public LayerKind {
public:
  std::vector<LayerReport> build(const spec::LayerSpec& l, const LayerContext& cx, LayerReport proto) const override {
    if (cx.python == nullptr) {
      throw Error(ErrorKind::internal, "layer '" + l.name + "': a wheels layer without the Python target");
    }
    proto.blob = build_wheels_layer(l, *cx.python, cx, proto, cx.wheels_out);
    return {std::move(proto)};
  }
};

} // namespace

const LayerKind& wheels_layer_kind() {
  static const WheelsLayerKind kind;
  return kind;
}

} // namespace builder
