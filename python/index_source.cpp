#include "python/index_source.hpp"

#include "python/metadata.hpp"
#include "python/tags.hpp"
#include "python/wheel.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <stdexcept>
#include <unistd.h>

namespace python {

using util::Error;
using util::ErrorKind;

IndexSource::IndexSource(PackageIndex& index, const TargetFacts& facts, std::map<std::string, BaseDistribution> base,
                         std::set<std::string> named, fs::path metadata_dir, int jobs)
    : m_index(index), m_facts(facts), m_base(std::move(base)), m_named(std::move(named)),
      m_metadata_dir(std::move(metadata_dir)), m_jobs(std::max(1, jobs)) {}

namespace {

struct Fit {
  const IndexFile* file;
  std::size_t rank;
};

// Why a file of the page is no candidate for the target ("" : it fits, with its rank).
std::string refusal(const IndexFile& f, const TargetFacts& facts, const std::optional<pep440::Version>& python,
                    WheelName& w, std::size_t& rank) {
  if (!f.filename.ends_with(".whl")) {
    return f.filename + " is a source distribution (wheels only: there is no build step)";
  }
  try {
    w = WheelName::parse(f.filename);
  } catch (const Error&) {
    return f.filename + " is not a wheel's name";
  }
  if (!pep440::Version::parse(w.version)) {
    return f.filename + ": '" + w.version + "' is not a PEP 440 version";
  }
  if (f.requires_python && python) {
    try {
      if (!pep440::SpecifierSet::parse(*f.requires_python).contains(*python, true)) {
        return f.filename + " requires Python " + *f.requires_python;
      }
    } catch (const std::invalid_argument&) {
      // pip ignores a Requires-Python it cannot parse; so do we.
    }
  }
  auto r = tag_rank(w, facts.tags);
  if (!r) {
    auto why = incompatibility(w, facts.target);
    return f.filename + ": " + (why ? *why : "no tag of it is supported by " + facts.target.describe());
  }
  rank = *r;
  return "";
}

} // namespace

const std::vector<IndexFile>& IndexSource::page(const std::string& key) {
  return project(key).page;
}

IndexSource::Project& IndexSource::project(const std::string& key) {
  std::once_flag* flag = nullptr;
  Project* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto& f = m_loading[key];
    if (!f) {
      f = std::make_unique<std::once_flag>();
    }
    flag = f.get();
    auto& slot = m_projects[key];
    if (!slot) {
      slot = std::make_unique<Project>();
    }
    p = slot.get();
  }
  std::call_once(*flag, [&] {
    auto base = m_base.find(key);
    const bool kept = base != m_base.end() && !m_named.count(key);
    if (!kept) {
      p->page = m_index.files(key);
    }
    auto python = pep440::Version::parse(m_facts.python_full_version);
    std::map<pep440::Version, std::vector<Fit>> by_version;
    for (const auto& f : p->page) {
      ++p->files;
      WheelName w;
      std::size_t rank = 0;
      std::string why = refusal(f, m_facts, python, w, rank);
      if (!why.empty()) {
        ++p->refused;
        if (p->refusal.empty()) {
          p->refusal = why;
        }
        continue;
      }
      by_version[*pep440::Version::parse(w.version)].push_back({&f, rank});
    }
    for (auto& [v, fits] : by_version) {
      // Unyanked first, then pip's tag order.
      std::stable_sort(fits.begin(), fits.end(), [](const Fit& a, const Fit& b) {
        return (!a.file->yanked && b.file->yanked) || (!a.file->yanked == !b.file->yanked && a.rank < b.rank);
      });
      Version ver;
      ver.candidate.version = v;
      ver.candidate.text = v.str();
      ver.candidate.yanked = static_cast<bool>(fits.front().file->yanked);
      for (const auto& fit : fits) {
        ver.files.push_back(fit.file);
      }
      p->versions.push_back(std::move(ver));
    }
    if (base != m_base.end()) {
      if (auto v = pep440::Version::parse(base->second.version)) {
        Version ver;
        ver.candidate.version = *v;
        ver.candidate.text = base->second.version;
        ver.candidate.installed = true;
        p->versions.push_back(std::move(ver));
      }
    }
  });
  return *p;
}

std::vector<resolver::Candidate> IndexSource::candidates(const std::string& key) {
  std::vector<resolver::Candidate> out;
  for (const auto& v : project(key).versions) {
    out.push_back(v.candidate);
  }
  return out;
}

std::string IndexSource::why_none(const std::string& key) {
  if (auto b = m_base.find(key); b != m_base.end() && !m_named.count(key)) {
    return "the base keeps " + b->second.name + " " + b->second.version + " (name " + key +
           " in the requirements to let the lock replace it)";
  }
  Project& p = project(key);
  if (p.files == 0) {
    return "";
  }
  return "none of the " + std::to_string(p.files) + " file(s) of " + key + " on the index fits " +
         m_facts.target.describe() + (p.refusal.empty() ? "" : " (" + p.refusal + ")");
}

std::string IndexSource::fetch_metadata(const IndexFile& file) {
  // Kept by the hash that names it: the PEP 658 file's, else the wheel's.
  fs::path kept;
  std::string want; // the sha256 the kept text must have ("" : a wheel's METADATA, checked by its wheel's hash)
  if (!m_metadata_dir.empty() && file.metadata_sha256 && !file.metadata_sha256->empty()) {
    kept = m_metadata_dir / (*file.metadata_sha256 + ".metadata");
    want = *file.metadata_sha256;
  } else if (!m_metadata_dir.empty() && !file.sha256.empty()) {
    kept = m_metadata_dir / (file.sha256 + ".wheel-metadata");
  }
  std::error_code ec;
  if (!kept.empty() && fs::is_regular_file(kept, ec)) {
    std::string text = util::read_file(kept);
    if (want.empty() || util::sha256_hex(text) == want) {
      std::lock_guard<std::mutex> lock(m_meta_mutex);
      ++m_metadata_cached;
      return text;
    }
  }
  std::string text;
  if (file.metadata_sha256) {
    text = m_index.metadata(file); // checked against its advertised hash
  } else if (m_wheel_metadata && !file.sha256.empty()) {
    text = m_wheel_metadata(file);
  } else {
    // No metadata file: the wheel's own METADATA, its download hashed as it streams
    // into a scratch file that is never committed (removed however this ends).
    fs::path dir = m_metadata_dir.empty() ? fs::temp_directory_path() : m_metadata_dir;
    util::create_dirs(dir, "metadata cache directory");
    util::AtomicFile out(dir / (".download-" + util::sha256_hex(file.url) + ".whl"), dir);
    util::Sha256 h;
    m_index.download(
        file,
        [&](const char* d, std::size_t n) {
          out.write(d, n);
          h.update(d, n);
        },
        [&] {
          if (::ftruncate(out.fd(), 0) != 0 || ::lseek(out.fd(), 0, SEEK_SET) != 0) {
            util::throw_errno("cannot restart " + out.temp_path().string());
          }
          h.reset();
        });
    if (std::string got = h.finish_hex(); !file.sha256.empty() && got != file.sha256) {
      throw Error(ErrorKind::integrity,
                  redact_url(file.url) + ": the file's sha256 is " + got + ", the index advertises " + file.sha256);
    }
    text = read_wheel_metadata(out.temp_path(), file.filename);
  }
  if (!kept.empty()) {
    fs::create_directories(kept.parent_path(), ec);
    util::write_file_atomic(kept, text);
  }
  std::lock_guard<std::mutex> lock(m_meta_mutex);
  ++m_metadata_fetched;
  return text;
}

std::vector<std::string> IndexSource::requires_dist(const std::string& key, const resolver::Candidate& c) {
  if (c.installed) {
    return m_base.at(key).requires_dist;
  }
  Project& p = project(key);
  auto it = std::find_if(p.versions.begin(), p.versions.end(),
                         [&](const Version& v) { return !v.candidate.installed && v.candidate.version == c.version; });
  if (it == p.versions.end() || it->files.empty()) {
    throw Error(ErrorKind::internal, "resolver asked for " + key + " " + c.text + ", which the index does not offer");
  }
  const IndexFile& file = *it->files.front();
  {
    std::lock_guard<std::mutex> lock(m_meta_mutex);
    if (auto m = m_meta.find(file.url); m != m_meta.end()) {
      return m->second;
    }
  }
  Metadata md = parse_metadata(fetch_metadata(file));
  // A metadata file that names another project or version steers nothing: refused.
  auto v = pep440::Version::parse(md.version);
  if (normalize_project_name(md.name) != key || !v || !(*v == c.version)) {
    throw Error(ErrorKind::integrity,
                redact_url(file.url) + ": its metadata describes " + md.name + " " + md.version + ", not " + key + " " +
                    c.text,
                "the index serves metadata that does not match the file: report it to the index's owner");
  }
  std::lock_guard<std::mutex> lock(m_meta_mutex);
  return m_meta[file.url] = md.requires_dist;
}

void IndexSource::prefetch(const std::vector<std::string>& keys) {
  if (m_jobs < 2 || keys.size() < 2) {
    return;
  }
  std::vector<std::string> todo(keys.begin(), keys.end());
  util::parallel_for(todo.size(), m_jobs, [&](std::size_t i) {
    Project& p = project(todo[i]);
    // The version the resolver will most likely try first: the base's, else the newest
    // final release.
    const Version* best = nullptr;
    for (const auto& v : p.versions) {
      if (v.candidate.installed) {
        return;
      }
      if (!v.candidate.yanked && !v.candidate.version.is_prerelease() &&
          (!best || best->candidate.version < v.candidate.version)) {
        best = &v;
      }
    }
    if (best) {
      requires_dist(todo[i], best->candidate);
    }
  });
}

std::vector<resolver::Input> IndexSource::keep_rules() const {
  std::vector<resolver::Input> out;
  for (const auto& [key, b] : m_base) {
    if (m_named.count(key)) {
      continue;
    }
    for (const auto& text : b.requires_dist) {
      Requirement r;
      try {
        r = Requirement::parse(text);
        if (r.marker && !r.marker->evaluate(m_facts.markers)) {
          continue;
        }
      } catch (const std::invalid_argument&) {
        continue; // the base's own business: the build's closure check reports it
      }
      auto dep = m_base.find(r.key);
      auto dv = dep == m_base.end() ? std::nullopt : pep440::Version::parse(dep->second.version);
      // A requirement the base itself does not meet is not the lock's to keep.
      if (!dv || !r.specifier.contains(*dv, true)) {
        continue;
      }
      r.extras.clear();
      r.marker.reset();
      out.push_back({r, "the base's " + b.name + " " + b.version, true});
    }
  }
  return out;
}

} // namespace python
