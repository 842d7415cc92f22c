#include "python/lock_resolve.hpp"

#include "python/metadata.hpp"
#include "python/resolver.hpp"
#include "python/wheel.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

#include <algorithm>

namespace python {

using util::Error;
using util::ErrorKind;

std::map<std::string, BaseDistribution> base_distributions(const TargetFacts& facts) {
  std::map<std::string, BaseDistribution> out;
  for (const auto& [key, version] : facts.base_dists) {
    BaseDistribution b{key, version, {}};
    if (auto it = facts.base_requires.find(key); it != facts.base_requires.end()) {
      b.requires_dist = it->second;
    }
    out[key] = std::move(b);
  }
  return out;
}

std::map<std::string, std::string> existing_pins(const fs::path& lock, bool upgrade,
                                                 const std::set<std::string>& upgrade_packages,
                                                 std::vector<std::string>& warnings) {
  std::map<std::string, std::string> pins;
  std::error_code ec;
  if (upgrade || lock.empty() || !fs::is_regular_file(lock, ec)) {
    return pins;
  }
  try {
    for (const auto& l : parse_requirements(lock, RequirementsMode::resolve).requirements) {
      if (!l.pinned().empty() && !upgrade_packages.count(l.requirement.key)) {
        pins[l.requirement.key] = l.pinned();
      }
    }
  } catch (const Error& e) {
    warnings.push_back(std::string("the existing ") + lock.string() +
                       " is not read, so no version of it is kept: " + e.what());
    pins.clear();
  }
  return pins;
}

namespace {

bool marker_holds(const RequirementLine& l, const TargetFacts& facts) {
  try {
    return !l.requirement.marker || l.requirement.marker->evaluate(facts.markers);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::input, l.where() + ": " + e.what());
  }
}

// The resolver's inputs: the lines that apply to the target, the constraints, and what
// the base's kept distributions require. Pinned lines whose marker excludes the target
// are written as they are (`passed`).
std::vector<resolver::Input> inputs_of(const RequirementsFile& input, const TargetFacts& facts,
                                       const IndexSource& source, std::vector<const RequirementLine*>& passed) {
  std::vector<resolver::Input> out;
  for (const auto& l : input.requirements) {
    if (!marker_holds(l, facts)) {
      if (!l.pinned().empty()) {
        passed.push_back(&l);
      }
      continue;
    }
    out.push_back({l.requirement, l.where(), false});
  }
  for (const auto& l : input.constraints) {
    out.push_back({l.requirement, l.where(), true});
  }
  auto rules = source.keep_rules();
  out.insert(out.end(), rules.begin(), rules.end());
  return out;
}

// A line no file can meet whatever the other lines say (its version is not on the
// index, no wheel of it fits the target): exit 9 with each file and why it was refused,
// before any resolving.
// Whether the page lists a wheel of a version the line's range accepts (pre-releases
// included: the question is whether a file, not a version, is what is missing).
bool in_range_on_page(const RequirementLine& l, const std::vector<IndexFile>& page) {
  for (const auto& f : page) {
    if (f.filename.size() < 4 || f.filename.compare(f.filename.size() - 4, 4, ".whl") != 0) {
      continue;
    }
    try {
      auto v = pep440::Version::parse(WheelName::parse(f.filename).version);
      if (v && l.requirement.specifier.contains(*v, true)) {
        return true;
      }
    } catch (const Error&) {
      continue; // a file the page lists under a name that is not a wheel's: not a candidate
    }
  }
  return false;
}

void check_lines_alone(const RequirementsFile& input, const TargetFacts& facts, IndexSource& source,
                       const std::map<std::string, BaseDistribution>& base, int jobs) {
  std::vector<const RequirementLine*> lines;
  for (const auto& l : input.requirements) {
    if (marker_holds(l, facts)) {
      lines.push_back(&l);
    }
  }
  util::parallel_for(lines.size(), jobs, [&](std::size_t i) { source.page(lines[i]->requirement.key); });
  for (const auto* l : lines) {
    const std::string& key = l->requirement.key;
    auto b = base.find(key);
    auto bv = b == base.end() ? std::nullopt : pep440::Version::parse(b->second.version);
    if (bv && l->requirement.specifier.contains(*bv, true)) {
      continue; // the base's copy meets it
    }
    if (!l->pinned().empty()) {
      select_wheel(*l, source.page(key), facts, false); // throws, naming every file and why
      continue;
    }
    bool any = false;
    for (const auto& c : source.candidates(key)) {
      any = any || (!c.installed && l->requirement.specifier.contains(c.version, true));
    }
    // No version in range at all is the resolver's to report (a derivation: the line,
    // what the index has); versions in range whose files all miss the target are this.
    if (!any && in_range_on_page(*l, source.page(key))) {
      std::string why = source.why_none(key);
      throw Error(ErrorKind::incompatible,
                  l->where() + ": no wheel of " + l->text + " on the index fits " + facts.target.describe() +
                      (why.empty() ? "" : ": " + why),
                  "widen the range, or use an index that publishes wheels for this Python and platform");
    }
  }
}

std::string extras_text(const std::set<std::string>& extras) {
  std::string s;
  for (const auto& e : extras) {
    s += (s.empty() ? "[" : ",") + e;
  }
  return s.empty() ? s : s + "]";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) {
    s += (s.empty() ? "" : ", ") + x;
  }
  return s;
}

} // namespace

ResolvedLock resolve_lock(const RequirementsFile& input, const TargetFacts& facts, PackageIndex& index,
                          const ResolveLockOptions& options) {
  std::set<std::string> named;
  for (const auto* lines : {&input.requirements, &input.constraints}) {
    for (const auto& l : *lines) {
      named.insert(l.requirement.key);
    }
  }
  auto base = base_distributions(facts);
  IndexSource source(index, facts, base, named, options.metadata_dir, options.jobs);
  if (options.wheel_metadata) {
    source.set_wheel_metadata(options.wheel_metadata);
  }
  std::vector<const RequirementLine*> passed;
  std::vector<resolver::Input> inputs = inputs_of(input, facts, source, passed);
  check_lines_alone(input, facts, source, base, options.jobs);
  resolver::Options ro;
  ro.markers = facts.markers;
  ro.pre = options.pre || input.pre;
  for (const auto& [key, version] : facts.base_dists) {
    ro.preferred[key] = version; // the base's copy adds nothing to the image
  }
  for (const auto& [key, version] : options.keep) {
    ro.preferred[key] = version; // an existing lock's pin changes nothing in it
  }
  resolver::Resolution r = resolver::resolve(inputs, source, ro);

  // Pinned input lines are written as they are; the rest as NAME[EXTRAS]==VERSION.
  std::map<std::string, const RequirementLine*> pinned_line;
  for (const auto& l : input.requirements) {
    if (!l.pinned().empty() && marker_holds(l, facts)) {
      pinned_line.emplace(l.requirement.key, &l);
    }
  }
  ResolvedLock out;
  out.lines.index_url = input.index_url;
  out.lines.extra_index_urls = input.extra_index_urls;
  out.lines.find_links = input.find_links;
  out.lines.no_index = input.no_index;
  std::vector<std::pair<RequirementLine, std::string>> lines;
  for (const auto& p : r.packages) {
    auto pl = pinned_line.find(p.key);
    if (p.candidate.installed && pl == pinned_line.end()) {
      out.in_base.push_back(p.key + "==" + p.candidate.text + " (via " + joined(p.via) + ")");
      continue;
    }
    if (pl != pinned_line.end()) {
      lines.emplace_back(*pl->second, joined(p.via));
      continue;
    }
    RequirementLine l;
    l.text = p.name + extras_text(p.extras) + "==" + p.candidate.text;
    l.requirement = Requirement::parse(l.text);
    l.file = "(resolved)";
    lines.emplace_back(std::move(l), joined(p.via));
  }
  for (const auto* l : passed) {
    lines.emplace_back(*l, "its marker excludes the target: written as it is");
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first.requirement.key < b.first.requirement.key; });
  for (auto& [l, via] : lines) {
    out.lines.requirements.push_back(std::move(l));
    out.via.push_back(std::move(via));
  }
  out.decisions = r.decisions;
  out.conflicts = r.conflicts;
  out.metadata_fetched = source.metadata_fetched();
  out.metadata_cached = source.metadata_cached();
  return out;
}

} // namespace python
