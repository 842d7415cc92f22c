#include "spec/sources_lock.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

namespace spec {

using util::Error;
using util::ErrorKind;

namespace {

constexpr int k_lock_version = 1;

bool is_hex(const std::string& s, std::size_t n) {
  return s.size() == n && util::is_lower_hex(s);
}

// Every remote rule of the spec's files and data layers.
template <typename Spec, typename Fn> void for_each_remote(Spec& s, Fn&& fn) {
  for (auto& l : s.layers) {
    if (auto* c = std::get_if<CopyLayerSpec>(&l.body)) {
      for (auto& cs : c->copies) {
        if (cs.remote) {
          fn(cs);
        }
      }
    }
  }
}

// Every image rule of the spec's files and data layers.
template <typename Spec, typename Fn> void for_each_image(Spec& s, Fn&& fn) {
  for (auto& l : s.layers) {
    if (auto* c = std::get_if<CopyLayerSpec>(&l.body)) {
      for (auto& cs : c->copies) {
        if (cs.image) {
          fn(cs);
        }
      }
    }
  }
}

Error malformed(const fs::path& file, const std::string& what) {
  return Error(ErrorKind::input, file.string() + ": " + what,
               "it is generated, never edited by hand: delete it and run paddle-image lock --sources --spec "
               "YOUR-SPEC to write it again");
}

std::string field(const nlohmann::json& e, const char* key, const fs::path& file, const std::string& where) {
  if (!e.is_object() || !e.contains(key) || !e[key].is_string()) {
    throw malformed(file, where + " has no '" + key + "' string");
  }
  return e[key].get<std::string>();
}

SourcesLock parse_lock(const nlohmann::json& j, const fs::path& file) {
  if (!j.is_object() || j.value("lockVersion", 0) != k_lock_version) {
    throw malformed(file, "not a sources lock of version " + std::to_string(k_lock_version));
  }
  SourcesLock lock;
  const nlohmann::json none = nlohmann::json::array();
  const nlohmann::json& downloads = j.contains("downloads") ? j["downloads"] : none;
  const nlohmann::json& git = j.contains("git") ? j["git"] : none;
  const nlohmann::json& images = j.contains("images") ? j["images"] : none;
  if (!downloads.is_array() || !git.is_array() || !images.is_array()) {
    throw malformed(file, "'downloads', 'git' and 'images' must be lists");
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::string where = "images[" + std::to_string(i) + "]";
    SourcesLock::Image im{field(images[i], "image", file, where), field(images[i], "platform", file, where),
                          field(images[i], "digest", file, where)};
    if (im.digest.rfind("sha256:", 0) != 0 || !is_hex(im.digest.substr(7), 64)) {
      throw malformed(file, where + ".digest is not sha256:HEX");
    }
    lock.images.push_back(im);
  }
  for (std::size_t i = 0; i < downloads.size(); ++i) {
    const std::string where = "downloads[" + std::to_string(i) + "]";
    SourcesLock::Download d{field(downloads[i], "url", file, where), field(downloads[i], "sha256", file, where)};
    if (!is_hex(d.sha256, 64)) {
      throw malformed(file, where + ".sha256 is not 64 lower-case hex digits");
    }
    if (downloads[i].contains("size")) {
      if (!downloads[i]["size"].is_number_integer() || downloads[i]["size"].get<std::int64_t>() < 0) {
        throw malformed(file, where + ".size is not a size in bytes");
      }
      d.size = downloads[i]["size"].get<std::int64_t>();
    }
    lock.downloads.push_back(d);
  }
  for (std::size_t i = 0; i < git.size(); ++i) {
    const std::string where = "git[" + std::to_string(i) + "]";
    SourcesLock::Git g{field(git[i], "url", file, where), field(git[i], "ref", file, where),
                       field(git[i], "commit", file, where)};
    if (!is_hex(g.commit, 40)) {
      throw malformed(file, where + ".commit is not a full commit (40 hex digits)");
    }
    lock.git.push_back(g);
  }
  return lock;
}

} // namespace

const SourcesLock::Download* SourcesLock::download(const std::string& url) const {
  auto it = std::find_if(downloads.begin(), downloads.end(), [&](const Download& d) { return d.url == url; });
  return it == downloads.end() ? nullptr : &*it;
}

const SourcesLock::Git* SourcesLock::git_pin(const std::string& url, const std::string& ref) const {
  auto it = std::find_if(git.begin(), git.end(), [&](const Git& g) { return g.url == url && g.ref == ref; });
  return it == git.end() ? nullptr : &*it;
}

const SourcesLock::Image* SourcesLock::image_pin(const std::string& image, const std::string& platform) const {
  auto it = std::find_if(images.begin(), images.end(),
                         [&](const Image& i) { return i.image == image && i.platform == platform; });
  return it == images.end() ? nullptr : &*it;
}

fs::path sources_lock_path(const fs::path& spec_file) {
  fs::path abs = fs::absolute(spec_file);
  return abs.parent_path() / (abs.stem().string() + ".sources.lock");
}

std::optional<SourcesLock> read_sources_lock(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return std::nullopt;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(util::read_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw malformed(file, std::string("not JSON: ") + e.what());
  }
  return parse_lock(j, file);
}

std::string sources_lock_text(SourcesLock lock) {
  std::sort(lock.downloads.begin(), lock.downloads.end(), [](const auto& a, const auto& b) { return a.url < b.url; });
  std::sort(lock.git.begin(), lock.git.end(),
            [](const auto& a, const auto& b) { return std::tie(a.url, a.ref) < std::tie(b.url, b.ref); });
  nlohmann::ordered_json j;
  j["comment"] = "Written by paddle-image lock --sources: the pins of the remote sources the spec leaves open. "
                 "Commit it with the spec; do not edit it.";
  j["lockVersion"] = k_lock_version;
  j["downloads"] = nlohmann::ordered_json::array();
  for (const auto& d : lock.downloads) {
    nlohmann::ordered_json e = {{"url", d.url}, {"sha256", d.sha256}};
    if (d.size >= 0) {
      e["size"] = d.size;
    }
    j["downloads"].push_back(e);
  }
  j["git"] = nlohmann::ordered_json::array();
  for (const auto& g : lock.git) {
    j["git"].push_back({{"url", g.url}, {"ref", g.ref}, {"commit", g.commit}});
  }
  if (!lock.images.empty()) {
    std::sort(lock.images.begin(), lock.images.end(), [](const auto& a, const auto& b) {
      return std::tie(a.image, a.platform) < std::tie(b.image, b.platform);
    });
    j["images"] = nlohmann::ordered_json::array();
    for (const auto& i : lock.images) {
      j["images"].push_back({{"image", i.image}, {"platform", i.platform}, {"digest", i.digest}});
    }
  }
  return j.dump(2) + "\n";
}

void apply_sources_lock(BuildSpec& s) {
  if (unpinned_sources(s).empty()) {
    return;
  }
  std::optional<SourcesLock> lock = read_sources_lock(s.sources_lock);
  if (!lock) {
    return;
  }
  for_each_remote(s, [&](CopySpec& cs) {
    RemoteSpec& r = *cs.remote;
    if (r.pinned()) {
      return;
    }
    if (r.is_git()) {
      if (const auto* g = lock->git_pin(r.url, r.git_ref)) {
        r.git_commit = g->commit;
        r.pinned_by = "lock";
      }
    } else if (const auto* d = lock->download(r.url)) {
      r.sha256 = d->sha256;
      if (r.size < 0) {
        r.size = d->size;
      }
      r.pinned_by = "lock";
    }
  });
  for_each_image(s, [&](CopySpec& cs) {
    ImageSourceSpec& im = *cs.image;
    if (const auto* pin = im.pinned() ? nullptr : lock->image_pin(im.ref, oci::platform_str(s.platform))) {
      im.digest = pin->digest;
      im.pinned_by = "lock";
    }
  });
}

std::vector<const CopySpec*> unpinned_sources(const BuildSpec& s) {
  std::vector<const CopySpec*> out;
  for_each_remote(s, [&](const CopySpec& cs) {
    if (!cs.remote->pinned()) {
      out.push_back(&cs);
    }
  });
  for_each_image(s, [&](const CopySpec& cs) {
    if (!cs.image->pinned()) {
      out.push_back(&cs);
    }
  });
  return out;
}

} // namespace spec
