#include "python/wheel_fetch.hpp"

#include "python/lock_resolve.hpp"
#include "python/pep440.hpp"
#include "python/tags.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

namespace python {

using util::Error;
using util::ErrorKind;

namespace {

constexpr const char* k_pypi = "https://pypi.org/simple";

bool is_sdist(const std::string& filename) {
  return filename.ends_with(".tar.gz") || filename.ends_with(".zip") || filename.ends_with(".tar.bz2") ||
         filename.ends_with(".tgz");
}

// The version part of an sdist's file name ("" when it cannot be told).
std::string sdist_version(const std::string& filename) {
  std::string stem = filename;
  for (const char* ext : {".tar.gz", ".tar.bz2", ".tgz", ".zip"}) {
    if (stem.ends_with(ext)) {
      stem.resize(stem.size() - std::string(ext).size());
      break;
    }
  }
  for (std::size_t i = stem.size(); i-- > 0;) {
    if (stem[i] == '-' && i + 1 < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i + 1]))) {
      return stem.substr(i + 1);
    }
  }
  return "";
}

// Does the line's specifier (a pin) take this version?
bool pin_matches(const python::RequirementLine& line, const std::string& version) {
  const auto& items = line.requirement.specifier.items;
  if (!items.empty() && items[0].op == "===") {
    std::string a = version, b = items[0].version;
    std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return std::tolower(c); });
    std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return std::tolower(c); });
    return a == b;
  }
  auto v = pep440::Version::parse(version);
  return v && line.requirement.specifier.contains(*v, true);
}

bool marker_applies(const python::RequirementLine& line, const TargetFacts& facts) {
  return !line.requirement.marker || line.requirement.marker->evaluate(facts.markers, {});
}

std::string short_hash(const std::string& hex) {
  return hex.size() > 12 ? hex.substr(0, 12) + "…" : hex;
}

// The file's bytes were hashed while they streamed; the lock line must list the hash.
void check_locked_hash(const Selected& sel, const std::string& got) {
  const auto& want = sel.line->sha256;
  if (std::find(want.begin(), want.end(), got) != want.end()) {
    return;
  }
  std::string listed;
  for (const auto& h : want) {
    listed += (listed.empty() ? "" : ", ") + h;
  }
  throw Error(ErrorKind::integrity,
              sel.line->where() + ": " + sel.file.filename + " from " + util::redact_url(sel.file.url) +
                  " has sha256 " + got + ", which the lock does not list (it lists " + listed + "); nothing was stored",
              "the index served other bytes than the ones locked (a tampered mirror or a re-uploaded file); find out "
              "why before you update the lock with paddle-image lock");
}

// A wheel of the pinned version that the target can install.
struct Fit {
  const python::IndexFile* file;
  python::WheelName wheel;
  pep440::Version version;
  std::size_t rank;
};

// What an index page offers for one lock line: the wheels that fit (yanked ones apart),
// the files of the pinned version refused with why, and the other versions listed.
struct Candidates {
  std::vector<Fit> fits, yanked_fits;
  std::vector<std::string> refused;
  std::set<std::string> other_versions;
};

// Sorts each file of the page into the line's candidates, as pip would judge it.
Candidates candidates(const python::RequirementLine& line, const std::vector<python::IndexFile>& files,
                      const TargetFacts& facts, bool check_hash) {
  Candidates c;
  auto python = pep440::Version::parse(facts.python_full_version);
  for (const auto& f : files) {
    if (is_sdist(f.filename)) {
      std::string v = sdist_version(f.filename);
      if (!v.empty() && pin_matches(line, v)) {
        c.refused.push_back(f.filename + ": a source distribution; paddle-image installs wheels only (there is no "
                                         "build step), so the index must offer a wheel for the target");
      }
      continue;
    }
    python::WheelName w;
    try {
      w = python::WheelName::parse(f.filename);
    } catch (const Error&) {
      continue; // not a wheel name: nothing pip would take either
    }
    auto v = pep440::Version::parse(w.version);
    if (!v) {
      continue;
    }
    if (!pin_matches(line, w.version)) {
      c.other_versions.insert(v->str());
      continue;
    }
    if (check_hash && !f.sha256.empty() &&
        std::find(line.sha256.begin(), line.sha256.end(), f.sha256) == line.sha256.end()) {
      c.refused.push_back(f.filename + ": its sha256 " + short_hash(f.sha256) + " is not in the lock");
      continue;
    }
    if (f.requires_python && python) {
      try {
        if (!pep440::SpecifierSet::parse(*f.requires_python).contains(*python, true)) {
          c.refused.push_back(f.filename + ": requires Python " + *f.requires_python + ", the target has " +
                              facts.python_full_version);
          continue;
        }
      } catch (const std::invalid_argument&) {
        // pip ignores a Requires-Python it cannot parse; so do we.
      }
    }
    auto rank = python::tag_rank(w, facts.tags);
    if (!rank) {
      auto why = python::incompatibility(w, facts.target);
      c.refused.push_back(f.filename + ": " +
                          (why ? *why : "none of its tags is supported by " + facts.target.describe()));
      continue;
    }
    Fit fit{&f, w, *v, *rank};
    (f.yanked ? c.yanked_fits : c.fits).push_back(std::move(fit));
  }
  return c;
}

// pip's order: the newest matching version, then the most specific tag, then the
// highest build number.
bool better_fit(const Fit& a, const Fit& b) {
  int c = pep440::compare(a.version, b.version);
  if (c != 0) {
    return c > 0; // the newest matching version, as pip
  }
  if (a.rank != b.rank) {
    return a.rank < b.rank; // then the most specific tag
  }
  return a.wheel.build > b.wheel.build;
}

// The best of the fitting wheels; a yanked one only when no other fits (with a note).
Selected best_fit(const python::RequirementLine& line, Candidates& c) {
  auto& pool = c.fits.empty() ? c.yanked_fits : c.fits;
  std::sort(pool.begin(), pool.end(), better_fit);
  Selected s;
  s.line = &line;
  s.file = *pool.front().file;
  s.wheel = pool.front().wheel;
  if (c.fits.empty()) {
    s.note = line.where() + ": " + s.file.filename + " is yanked" +
             (s.file.yanked->empty() ? "" : " (" + *s.file.yanked + ")") +
             "; taken because the lock pins exactly this version";
  }
  return s;
}

// No file of the pinned version at all: the error lists the versions the index has.
[[noreturn]] void throw_no_file(const python::RequirementLine& line, const std::set<std::string>& other_versions) {
  const std::string& name = line.requirement.name;
  std::string pin = line.requirement.specifier.str();
  std::vector<std::string> versions(other_versions.begin(), other_versions.end());
  std::sort(versions.begin(), versions.end(), [](const std::string& a, const std::string& b) {
    auto va = pep440::Version::parse(a), vb = pep440::Version::parse(b);
    return va && vb ? pep440::compare(*va, *vb) > 0 : a > b;
  });
  if (versions.size() > 12) {
    versions.resize(12);
    versions.push_back("…");
  }
  throw Error(
      ErrorKind::incompatible,
      line.where() + ": no file of " + name + pin + " on the index" +
          (versions.empty() ? " (it lists no file of " + name + " at all)" : "; it has " + util::join(versions, ", ")),
      "check the pinned version and the index (spec 'index'/'find_links', the lock's -i/-f); a version "
      "published only on another index needs that index in 'index' or 'find_links'");
}

// Files of the pinned version, none of them fitting: the error lists each with why.
[[noreturn]] void throw_no_fit(const python::RequirementLine& line, const std::vector<std::string>& refused,
                               const TargetFacts& facts) {
  const std::string& name = line.requirement.name;
  std::string pin = line.requirement.specifier.str();
  std::string list;
  for (const auto& r : refused) {
    list += "\n  - " + r;
  }
  throw Error(ErrorKind::incompatible,
              line.where() + ": no wheel of " + name + pin + " fits " + facts.target.describe() +
                  "; the index has:" + list,
              "pin a version that publishes a wheel for this Python and platform, or change the base image or the "
              "spec's python settings");
}

} // namespace

std::unique_ptr<python::PackageIndex> open_index(const Sources& s, const IndexAccess& access, registry::Stats& stats) {
  std::shared_ptr<registry::Transport> http = access.http;
  if (!http) {
    registry::HttpOptions ho;
    ho.connect_timeout_s = access.client.connect_timeout_s;
    ho.set_timeout(access.client.stall_timeout_s);
    ho.log = access.client.log;
    http = std::make_shared<registry::Http>(ho);
  }
  registry::ClientOptions client = access.client;
  if (access.insecure_all) {
    for (const auto& list : {s.sources.indexes, s.sources.find_links}) {
      for (const auto& u : list) {
        if (auto url = util::parse_url(u)) {
          client.insecure.insert(url->authority());
        }
      }
    }
  }
  return std::make_unique<python::PackageIndex>(s.sources, http, client, stats);
}

TargetFacts target_facts(const python::PythonTarget& target, const std::string& python_full_version,
                         std::map<std::string, std::string> base_dists) {
  TargetFacts f;
  f.target = target;
  f.python_full_version = python_full_version;
  f.markers = python::marker_environment(target, python_full_version);
  f.tags = python::supported_tags(target);
  f.base_dists = std::move(base_dists);
  return f;
}

Sources layer_sources(const std::vector<std::string>& spec_indexes, const std::vector<std::string>& spec_find_links,
                      const python::RequirementsFile& lock, const IndexDefaults& defaults,
                      const std::string& indexes_from) {
  Sources s;
  s.sources.netrc = defaults.netrc;
  auto add = [](std::vector<std::string>& to, const std::string& url) {
    if (std::find(to.begin(), to.end(), url) == to.end()) {
      to.push_back(url);
    }
  };
  if (!spec_indexes.empty()) {
    for (const auto& u : spec_indexes) {
      add(s.sources.indexes, u);
    }
    s.described = indexes_from;
  } else if (lock.no_index) {
    s.described = "no index (the lock says --no-index)";
  } else if (lock.index_url) {
    add(s.sources.indexes, *lock.index_url);
    s.described = "the lock's --index-url";
  } else if (defaults.index_url) {
    add(s.sources.indexes, *defaults.index_url);
    s.described = defaults.index_url_from;
  } else {
    add(s.sources.indexes, k_pypi);
    s.described = "PyPI (no index configured)";
  }
  if (!lock.no_index) {
    for (const auto& u : lock.extra_index_urls) {
      add(s.sources.indexes, u);
    }
    if (spec_indexes.empty()) {
      for (const auto& u : defaults.extra_index_urls) {
        add(s.sources.indexes, u);
      }
    }
  }
  for (const auto& u : spec_find_links) {
    add(s.sources.find_links, u);
  }
  for (const auto& u : lock.find_links) {
    add(s.sources.find_links, u);
  }
  if (spec_find_links.empty()) {
    for (const auto& u : defaults.find_links) {
      add(s.sources.find_links, u);
    }
  }
  return s;
}

std::vector<std::string> Sources::redacted() const {
  std::vector<std::string> out;
  for (const auto& list : {sources.indexes, sources.find_links}) {
    for (const auto& u : list) {
      out.push_back(util::redact_url(u));
    }
  }
  return out;
}

Selected select_wheel(const python::RequirementLine& line, const std::vector<python::IndexFile>& files,
                      const TargetFacts& facts, bool check_hash) {
  Candidates c = candidates(line, files, facts, check_hash);
  if (!c.fits.empty() || !c.yanked_fits.empty()) {
    return best_fit(line, c);
  }
  if (c.refused.empty()) {
    throw_no_file(line, c.other_versions);
  }
  throw_no_fit(line, c.refused, facts);
}

void check_closure(const std::vector<ClosureInput>& locked, const TargetFacts& facts, const std::string& lock_name) {
  struct Have {
    std::string version;
    std::string from; // "the lock (file:line)" or "the base image"
    const ClosureInput* input = nullptr;
    std::set<std::string> extras_done;
  };
  std::map<std::string, Have> have;
  for (const auto& [name, version] : facts.base_dists) {
    have[name] = Have{version, "the base image", nullptr, {}};
  }
  for (const auto& l : locked) {
    have[l.name] = Have{l.version, l.where, &l, {}};
  }
  std::vector<std::string> problems;
  std::set<std::string> reported;
  // (who, extras asked for it): processed until no new extras appear.
  std::vector<std::pair<const ClosureInput*, std::set<std::string>>> work;
  for (const auto& l : locked) {
    work.emplace_back(&l, l.extras);
  }
  while (!work.empty()) {
    auto [who, extras] = work.back();
    work.pop_back();
    Have& self = have[who->name];
    std::set<std::string> fresh;
    for (const auto& e : extras) {
      if (self.extras_done.insert(e).second) {
        fresh.insert(e);
      }
    }
    bool first_pass = self.extras_done.count("") == 0;
    self.extras_done.insert("");
    for (const auto& text : who->metadata.requires_dist) {
      python::Requirement r;
      try {
        r = python::Requirement::parse(text);
      } catch (const std::invalid_argument& e) {
        problems.push_back(who->name + " " + who->version + " has a malformed Requires-Dist '" + text +
                           "': " + e.what());
        continue;
      }
      // On a later pass only requirements that the new extras switch on are new.
      bool applies_now = !r.marker || r.marker->evaluate(facts.markers, self.extras_done);
      bool applied_before = first_pass ? false : (!r.marker || r.marker->evaluate(facts.markers, [&] {
        std::set<std::string> before = self.extras_done;
        for (const auto& e : fresh) {
          before.erase(e);
        }
        return before;
      }()));
      if (!applies_now || applied_before) {
        continue;
      }
      std::string needer = who->name + " " + who->version + " (" + who->where + ")";
      auto it = have.find(r.key);
      if (it == have.end()) {
        std::string msg = r.key + " (" + text + "), needed by " + needer + ": in neither the lock nor the base image";
        if (reported.insert(msg).second) {
          problems.push_back(msg);
        }
        continue;
      }
      auto v = pep440::Version::parse(it->second.version);
      if (v && !r.specifier.empty() && !r.specifier.contains(*v, true)) {
        problems.push_back(who->name + " " + who->version + " needs " + text + ", but " + it->second.from + " has " +
                           r.key + " " + it->second.version);
      }
      if (!r.extras.empty() && it->second.input) {
        work.emplace_back(it->second.input, r.extras);
      }
    }
  }
  if (problems.empty()) {
    return;
  }
  std::string list;
  for (const auto& p : problems) {
    list += "\n  - " + p;
  }
  throw Error(ErrorKind::input,
              lock_name + ": the locked wheels do not satisfy their own requirements for " + facts.target.describe() +
                  " (pip check would fail in the image):" + list,
              "add each missing requirement to the requirements file pinned (NAME==VERSION) and run paddle-image lock "
              "again, or use a base image that already has it");
}

std::vector<FetchedWheel> fetch_wheels(const std::vector<Selected>& selected, python::PackageIndex& index,
                                       layers::LayerCache& cache, int jobs,
                                       const std::function<void(const std::string&)>& info, FetchStats& stats,
                                       const FetchProgress& progress) {
  std::vector<FetchedWheel> out(selected.size());
  std::mutex mutex;
  auto say = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    info(line);
  };
  util::parallel_for(selected.size(), jobs, [&](std::size_t i) {
    const Selected& sel = selected[i];
    // Keyed by the advertised hash when there is one (the cache then answers without
    // asking the index), else by the URL and the hashes the lock accepts.
    std::string key_input = sel.file.sha256.empty() ? "wheel-url\n" + util::redact_url(sel.file.url) + "\n" +
                                                          util::join(sel.line->sha256, ",")
                                                    : "wheel-file\n" + sel.file.sha256;
    std::string key = util::sha256_hex(key_input);
    bool rebuilt = false;
    layers::BlobInfo blob = layers::cached_download(
        cache, key, "application/vnd.python.wheel",
        [&](const layers::DownloadSink& write, const std::function<void()>& restart) {
          say("  downloading " + sel.file.filename + " from " + util::redact_url(sel.file.page));
          std::int64_t size = 0;
          index.download(
              sel.file,
              [&](const char* data, std::size_t len) {
                write(data, len);
                size += static_cast<std::int64_t>(len);
                if (progress) {
                  progress(sel.file.filename, size, sel.file.size);
                }
              },
              [&] {
                size = 0;
                restart();
              });
        },
        [&](const std::string& got, std::int64_t) { check_locked_hash(sel, got); }, rebuilt);
    check_locked_hash(sel, blob.digest.hex); // a URL-keyed entry from another lock
    FetchedWheel& fw = out[i];
    fw.selected = sel;
    fw.path = cache.blobs().blob_path(blob.digest);
    fw.sha256 = blob.digest.hex;
    fw.downloaded = rebuilt;
    std::lock_guard<std::mutex> lock(mutex);
    if (rebuilt) {
      ++stats.downloaded;
      stats.bytes += blob.size;
    } else {
      ++stats.cached;
    }
  });
  return out;
}

namespace {

// The lines of a lock that apply to the target, each with its file selected.
std::vector<Selected> select_all(const std::vector<const python::RequirementLine*>& lines, python::PackageIndex& index,
                                 const TargetFacts& facts, int jobs, bool check_hash) {
  std::vector<Selected> selected(lines.size());
  util::parallel_for(lines.size(), jobs, [&](std::size_t i) {
    selected[i] = select_wheel(*lines[i], index.files(lines[i]->requirement.key), facts, check_hash);
  });
  return selected;
}

ClosureInput closure_input(const Selected& sel, const std::string& metadata_text) {
  ClosureInput c;
  c.metadata = parse_metadata(metadata_text);
  c.name = python::normalize_project_name(sel.wheel.distribution);
  c.version = sel.wheel.version;
  c.extras = sel.line->requirement.extras;
  c.where = sel.line->where();
  if (python::normalize_project_name(c.metadata.name) != c.name) {
    throw Error(ErrorKind::input, sel.file.filename + ": its METADATA names project '" + c.metadata.name + "'",
                "the index serves a mislabelled wheel; use another mirror");
  }
  return c;
}

} // namespace

LockedLayer open_locked_layer(const LockedLayerInput& layer, const IndexDefaults& defaults) {
  LockedLayer out;
  out.file = layer.file;
  std::error_code ec;
  if (!fs::exists(out.file, ec)) {
    throw Error(ErrorKind::input, layer.origin + ": lock file " + out.file.string() + " does not exist",
                "write it from pinned requirements: paddle-image lock requirements.txt -o " + out.file.string() +
                    " --spec SPEC --layer " + layer.layer);
  }
  out.lock = python::parse_requirements(out.file, python::RequirementsMode::lock);
  out.sources = layer_sources(layer.indexes, layer.find_links, out.lock, defaults);
  return out;
}

void fetch_locked_layer(LockedLayer& out, const TargetFacts& facts, const IndexAccess& access,
                        layers::LayerCache& cache, int jobs, const std::function<void(const std::string&)>& info,
                        const FetchProgress& progress) {
  registry::Stats stats;
  auto index_owner = open_index(out.sources, access, stats);
  python::PackageIndex& index = *index_owner;
  std::vector<const python::RequirementLine*> lines;
  for (const auto& l : out.lock.requirements) {
    if (marker_applies(l, facts)) {
      if (l.sha256.empty()) {
        throw Error(ErrorKind::input,
                    l.where() + ": '" + l.text + "' has no --hash=sha256:, and its marker includes " +
                        facts.target.describe(),
                    "lock it for this target: paddle-image lock REQUIREMENTS -o " + out.file.string() +
                        " --spec SPEC --layer LAYER");
      }
      lines.push_back(&l);
    }
  }
  info("  " + std::to_string(lines.size()) + " locked wheel(s) from " + out.sources.described + " (" +
       util::join(out.sources.redacted(), ", ") + ")");
  std::vector<Selected> selected = select_all(lines, index, facts, jobs, true);
  for (const auto& s : selected) {
    if (!s.note.empty()) {
      info("  warning: " + s.note);
    }
  }
  out.wheels = fetch_wheels(selected, index, cache, jobs, info, out.stats, progress);
  std::vector<ClosureInput> closure;
  for (const auto& w : out.wheels) {
    std::string meta = python::read_wheel_metadata(w.path, w.selected.file.filename);
    // PEP 658: the metadata file the index offers is the wheel's METADATA, byte for byte,
    // so the hash the page advertises for it must be the hash of the wheel's own (a lock
    // closed over one and a build installing the other would disagree).
    const auto& advertised = w.selected.file.metadata_sha256;
    if (advertised && !advertised->empty() && util::sha256_hex(meta) != *advertised) {
      throw Error(ErrorKind::integrity,
                  w.selected.file.filename + ": its METADATA (sha256 " + util::sha256_hex(meta) +
                      ") is not the metadata " + w.selected.file.page + " advertises (sha256 " + *advertised + ")",
                  "the index serves metadata that differs from the wheel; use another mirror");
    }
    closure.push_back(closure_input(w.selected, meta));
  }
  check_closure(closure, facts, out.file.string());
}

namespace {

// Per line of the requirements: the files whose hashes go into the lock, and the
// selected one (for the closure check) when the line applies to the target.
struct LockPlan {
  std::vector<python::IndexFile> hashed;
  std::optional<Selected> selected;
};

// The wheels of the line's pinned version whose hashes the lock lists. Without
// --all-platforms a line for this target takes every wheel that fits it (pip may pick
// any of them on another machine of the same kind); a line whose marker excludes the
// target keeps every wheel of the version.
std::vector<python::IndexFile> hashed_files(const python::RequirementLine& line,
                                            const std::vector<python::IndexFile>& page, const TargetFacts& facts,
                                            bool all_platforms, bool applies) {
  std::vector<python::IndexFile> hashed;
  for (const auto& f : page) {
    if (!f.filename.ends_with(".whl")) {
      continue;
    }
    python::WheelName w;
    try {
      w = python::WheelName::parse(f.filename);
    } catch (const Error&) {
      continue;
    }
    if (!pin_matches(line, w.version)) {
      continue;
    }
    bool fits = python::tag_rank(w, facts.tags).has_value();
    if (all_platforms || !applies || fits) {
      hashed.push_back(f);
    }
  }
  return hashed;
}

// Each line's plan; the note of a selected file (a yanked one) becomes a warning.
std::vector<LockPlan> plan_lock(const python::RequirementsFile& reqs,
                                const std::vector<std::vector<python::IndexFile>>& pages, const TargetFacts& facts,
                                bool all_platforms, std::vector<std::string>& warnings) {
  std::vector<LockPlan> plans(reqs.requirements.size());
  for (std::size_t i = 0; i < reqs.requirements.size(); ++i) {
    const auto& line = reqs.requirements[i];
    bool applies = marker_applies(line, facts);
    if (applies) {
      plans[i].selected = select_wheel(line, pages[i], facts, false);
      if (!plans[i].selected->note.empty()) {
        warnings.push_back(plans[i].selected->note);
      }
    }
    plans[i].hashed = hashed_files(line, pages[i], facts, all_platforms, applies);
  }
  return plans;
}

// Hashes the index does not advertise, computed from the file (url -> sha256).
std::map<std::string, std::string> hash_unadvertised(const std::vector<LockPlan>& plans,
                                                     const python::RequirementsFile& reqs, python::PackageIndex& index,
                                                     int jobs, const std::function<void(const std::string&)>& info) {
  std::vector<Selected> to_hash;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    for (const auto& f : plans[i].hashed) {
      if (f.sha256.empty()) {
        Selected s;
        s.line = &reqs.requirements[i];
        s.file = f;
        s.wheel = python::WheelName::parse(f.filename);
        to_hash.push_back(s);
      }
    }
  }
  std::map<std::string, std::string> computed; // url -> sha256
  if (!to_hash.empty()) {
    info("  " + std::to_string(to_hash.size()) + " file(s) have no advertised sha256; downloading them to hash");
    util::parallel_for(to_hash.size(), jobs, [&](std::size_t k) {
      util::Sha256 h;
      index.download(
          to_hash[k].file, [&](const char* d, std::size_t len) { h.update(d, len); }, [&]() { h.reset(); });
      std::string hex = h.finish_hex();
      static std::mutex m;
      std::lock_guard<std::mutex> lock(m);
      computed[to_hash[k].file.url] = hex;
    });
  }
  return computed;
}

// Text that goes into a "#" comment of the lock: one line, whatever a file name or a
// project's metadata holds.
std::string comment_safe(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
  }
  return out;
}

// The lock's head: what wrote it, and the requirements' index options.
std::string lock_header(const python::RequirementsFile& reqs, const fs::path& requirements, const TargetFacts& facts,
                        bool all_platforms) {
  std::ostringstream text;
  text << "#\n# This file is written by paddle-image lock from " << requirements.filename().string() << " for "
       << (all_platforms ? "every platform" : facts.target.describe()) << ".\n"
       << "# Edit " << requirements.filename().string()
       << " and run paddle-image lock again; do not edit by hand.\n#\n";
  if (reqs.no_index) {
    text << "--no-index\n";
  }
  // Credentials in these URLs stay out of the lock (it is committed and shared): the
  // build takes them from netrc or the spec's index URL.
  if (reqs.index_url) {
    text << "--index-url " << util::without_userinfo(*reqs.index_url) << "\n";
  }
  for (const auto& u : reqs.extra_index_urls) {
    text << "--extra-index-url " << util::without_userinfo(u) << "\n";
  }
  for (const auto& u : reqs.find_links) {
    text << "--find-links " << util::without_userinfo(u) << "\n";
  }
  if (reqs.no_index || reqs.index_url || !reqs.extra_index_urls.empty() || !reqs.find_links.empty()) {
    text << "\n";
  }
  return text.str();
}

// One requirement line with its hashes, written to the lock and reported in `res`.
void lock_line(const python::RequirementLine& line, const LockPlan& plan, std::map<std::string, std::string>& computed,
               std::ostringstream& text, LockResult& res) {
  std::set<std::string> hashes;
  LockResult::Line rl;
  rl.name = line.requirement.name;
  rl.version = line.pinned();
  for (const auto& f : plan.hashed) {
    std::string h = f.sha256.empty() ? computed[f.url] : f.sha256;
    hashes.insert(h);
    rl.files.push_back(f.filename);
  }
  if (hashes.empty() && !plan.selected && line.requirement.marker) {
    // Its marker excludes the target and the index has no wheel of it: written as it
    // is, as pip ignores it here; a build for a target it applies to refuses it.
    res.warnings.push_back(line.where() + ": " + line.text +
                           ": no wheel on the index, and its marker excludes the target; written without hashes");
    text << line.text << "\n";
    res.lines.push_back(rl);
    return;
  }
  if (hashes.empty()) {
    throw Error(ErrorKind::incompatible, line.where() + ": no wheel of " + line.text + " on the index to hash",
                "pin a version that publishes wheels");
  }
  text << line.text;
  for (const auto& h : hashes) {
    text << " \\\n    --hash=sha256:" << h;
  }
  text << "\n";
  res.lines.push_back(rl);
}

} // namespace

LockResult write_lock(const fs::path& requirements, const TargetFacts& facts, const LockOptions& options,
                      const IndexAccess& access, layers::LayerCache& cache, int jobs,
                      const std::function<void(const std::string&)>& info) {
  LockResult res;
  auto input = python::parse_requirements(requirements, python::RequirementsMode::resolve);
  res.sources = layer_sources(options.indexes, options.find_links, input, access.defaults, options.indexes_from);
  registry::Stats stats;
  auto index_owner = open_index(res.sources, access, stats);
  python::PackageIndex& index = *index_owner;
  ResolveLockOptions ro;
  ro.keep = existing_pins(options.existing, options.upgrade, options.upgrade_packages, res.warnings);
  ro.pre = options.pre;
  ro.metadata_dir = cache.dir() / "python-metadata";
  ro.jobs = jobs;
  ro.wheel_metadata = [&](const python::IndexFile& f) {
    // Into the layer cache, by its advertised hash: the build finds it there.
    python::RequirementLine line;
    line.text = f.filename;
    line.file = requirements;
    line.sha256 = {f.sha256};
    Selected s;
    s.line = &line;
    s.file = f;
    s.wheel = python::WheelName::parse(f.filename);
    FetchStats st;
    auto w = fetch_wheels({s}, index, cache, 1, info, st);
    return python::read_wheel_metadata(w.front().path, f.filename);
  };
  ResolvedLock resolved = resolve_lock(input, facts, index, ro);
  const RequirementsFile& reqs = resolved.lines;
  info("  resolved " + std::to_string(reqs.requirements.size() + resolved.in_base.size()) + " package(s) (" +
       std::to_string(resolved.in_base.size()) + " already in the base) in " + std::to_string(resolved.decisions) +
       " decision(s), " + std::to_string(resolved.conflicts) +
       " conflict(s); metadata: " + std::to_string(resolved.metadata_fetched) + " fetched, " +
       std::to_string(resolved.metadata_cached) + " from the cache");
  std::vector<std::vector<python::IndexFile>> pages(reqs.requirements.size());
  util::parallel_for(reqs.requirements.size(), jobs,
                     [&](std::size_t i) { pages[i] = index.files(reqs.requirements[i].requirement.key); });
  std::vector<LockPlan> plans = plan_lock(reqs, pages, facts, options.all_platforms, res.warnings);
  std::map<std::string, std::string> computed = hash_unadvertised(plans, reqs, index, jobs, info);
  // No closure check here: the resolution is the closure (the build checks it again,
  // from each wheel's own METADATA).

  std::ostringstream text;
  text << lock_header(reqs, requirements, facts, options.all_platforms);
  for (std::size_t i = 0; i < reqs.requirements.size(); ++i) {
    lock_line(reqs.requirements[i], plans[i], computed, text, res);
    text << "    # via " << comment_safe(resolved.via[i]) << "\n";
  }
  if (!resolved.in_base.empty()) {
    text << "\n# Already in the base image, at a version that fits, so not locked here:\n";
    for (const auto& b : resolved.in_base) {
      text << "#   " << comment_safe(b) << "\n";
    }
  }
  res.text = text.str();
  res.in_base = resolved.in_base;
  res.decisions = resolved.decisions;
  res.conflicts = resolved.conflicts;
  res.metadata_fetched = resolved.metadata_fetched;
  res.metadata_cached = resolved.metadata_cached;
  return res;
}

} // namespace python
