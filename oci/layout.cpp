#include "oci/layout.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace oci {

using util::Error;
using util::ErrorKind;

BlobStore::BlobStore(fs::path root) : m_root(std::move(root)) {}

fs::path BlobStore::blob_path(const Digest& d) const {
  return m_root / "blobs" / d.algorithm / d.hex;
}

bool BlobStore::has(const Digest& d) const {
  std::error_code ec;
  return fs::is_regular_file(blob_path(d), ec);
}

std::unique_ptr<util::AtomicFile> BlobStore::begin_write() {
  util::create_dirs(m_root / ".tmp", "the blob store's temporary directory");
  util::create_dirs(m_root / "blobs" / "sha256", "the blob directory");
  return std::make_unique<util::AtomicFile>(m_root / "blobs" / "sha256" / "pending", m_root / ".tmp");
}

void BlobStore::commit(util::AtomicFile& tmp, const Digest& d) {
  fs::path dst = blob_path(d);
  util::create_dirs(dst.parent_path(), "the blob directory");
  tmp.commit_as(dst);
}

Descriptor BlobStore::put_bytes(const std::string& media_type, const std::string& bytes) {
  Descriptor desc{media_type, Digest::sha256(util::sha256_hex(bytes)), static_cast<std::int64_t>(bytes.size()), {}, {}};
  if (!has(desc.digest)) {
    auto tmp = begin_write();
    tmp->write(bytes);
    commit(*tmp, desc.digest);
  }
  return desc;
}

void BlobStore::put_file(const Digest& d, const fs::path& src) {
  if (has(d)) {
    return;
  }
  util::create_dirs(blob_path(d).parent_path(), "the blob directory");
  util::link_or_copy(src, blob_path(d));
}

std::string BlobStore::read_small(const Digest& d, std::int64_t max_size) const {
  fs::path p = blob_path(d);
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  if (ec) {
    throw Error(ErrorKind::input, "blob " + d.str() + " is missing from " + m_root.string(),
                "the layout is incomplete; rebuild or re-copy the image");
  }
  if (static_cast<std::int64_t>(size) > max_size) {
    throw Error(ErrorKind::input, "blob " + d.str() + " is too large to be a manifest or config");
  }
  std::string bytes = util::read_file(p);
  if (d.algorithm == "sha256" && util::sha256_hex(bytes) != d.hex) {
    throw Error(ErrorKind::integrity, "blob " + d.str() + " in " + m_root.string() + " does not match its digest",
                "the file was modified or corrupted; delete it and rebuild");
  }
  return bytes;
}

void BlobStore::remove_stale_temps() const {
  util::remove_stale_temps(m_root / ".tmp");
}

OciLayout::OciLayout(fs::path dir) : m_dir(std::move(dir)), m_blobs(m_dir) {}

OciLayout OciLayout::open_existing(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::input, "'" + dir.string() + "' is not a directory", "check the oci:DIR reference");
  }
  if (!fs::is_regular_file(dir / "oci-layout", ec)) {
    throw Error(ErrorKind::input, "'" + dir.string() + "' is not an OCI image layout (no oci-layout file)",
                "point at a directory written by paddle-image, skopeo or umoci");
  }
  auto marker = parse_json(util::read_file(dir / "oci-layout"), (dir / "oci-layout").string());
  if (marker.value("imageLayoutVersion", "") != "1.0.0") {
    throw Error(ErrorKind::input, (dir / "oci-layout").string() + ": unsupported imageLayoutVersion");
  }
  return OciLayout(dir);
}

OciLayout OciLayout::open_or_create(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "oci-layout", ec)) {
    return open_existing(dir);
  }
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      throw Error(ErrorKind::input, "output '" + dir.string() + "' exists and is not a directory",
                  "choose another path for oci:DIR");
    }
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string name = e.path().filename().string();
      // What an interrupted creation may have left (the marker is written last).
      if (name != ".paddle-image.lock" && name != ".tmp" && name != "blobs" && name != "index.json") {
        throw Error(ErrorKind::input,
                    "output '" + dir.string() + "' is a non-empty directory that is not an OCI image layout",
                    "choose an empty or new directory, or an existing layout");
      }
    }
  }
  util::create_dirs(dir / "blobs" / "sha256", "the blob directory");
  if (!fs::exists(dir / "index.json", ec)) {
    util::write_file_atomic(dir / "index.json", canonical(to_json(Index{})));
  }
  // The marker is written last: a layout is recognised only once it is complete.
  util::write_file_atomic(dir / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  return OciLayout(dir);
}

Index OciLayout::read_index() const {
  fs::path p = m_dir / "index.json";
  return util::with_context(p.string(), [&] { return index_from_json(parse_json(util::read_file(p), p.string())); });
}

void OciLayout::add_manifest(const Descriptor& manifest, const std::vector<std::string>& tags) {
  Index index = read_index();
  std::set<std::string> wanted(tags.begin(), tags.end());
  std::vector<Descriptor> kept;
  for (const auto& m : index.manifests) {
    auto it = m.annotations.find(k_ref_name_annotation);
    if (it != m.annotations.end() && wanted.count(it->second) > 0) {
      continue;
    }
    if (tags.empty() && m.digest == manifest.digest && m.annotations.empty()) {
      continue;
    }
    kept.push_back(m);
  }
  if (tags.empty()) {
    kept.push_back(manifest);
  }
  for (const auto& t : tags) {
    Descriptor d = manifest;
    d.annotations[k_ref_name_annotation] = t;
    kept.push_back(d);
  }
  index.manifests = kept;
  util::write_file_atomic(m_dir / "index.json", canonical(to_json(index)));
}

Descriptor OciLayout::resolve(const std::string& tag) const {
  return select_entry(read_index(), tag, "layout " + m_dir.string(), "oci:" + m_dir.string());
}

Descriptor select_entry(Index index, const std::string& tag, const std::string& what, const std::string& ref) {
  if (tag.empty()) {
    std::erase_if(index.manifests, [](const Descriptor& m) {
      auto it = m.annotations.find(k_ref_name_annotation);
      return it != m.annotations.end() && is_attachment_tag(it->second);
    });
    // One image under several tags is still one image.
    bool one_digest = !index.manifests.empty() &&
                      std::all_of(index.manifests.begin(), index.manifests.end(),
                                  [&](const Descriptor& m) { return m.digest == index.manifests.front().digest; });
    if (one_digest) {
      return index.manifests.front();
    }
    std::string names;
    for (const auto& m : index.manifests) {
      auto it = m.annotations.find(k_ref_name_annotation);
      names += " " + (it == m.annotations.end() ? m.digest.str() : it->second);
    }
    throw Error(ErrorKind::input,
                what + " holds " + std::to_string(index.manifests.size()) + " manifests; name one with " + ref + ":TAG",
                index.manifests.empty() ? "the " + what.substr(0, what.find(' ')) + " is empty"
                                        : "tags present:" + names);
  }
  for (auto it = index.manifests.rbegin(); it != index.manifests.rend(); ++it) {
    auto a = it->annotations.find(k_ref_name_annotation);
    if (a != it->annotations.end() && a->second == tag) {
      return *it;
    }
  }
  std::string names;
  for (const auto& m : index.manifests) {
    auto a = m.annotations.find(k_ref_name_annotation);
    if (a != m.annotations.end()) {
      names += " " + a->second;
    }
  }
  throw Error(ErrorKind::input, "tag '" + tag + "' not found in " + what,
              names.empty() ? "the " + what.substr(0, what.find(' ')) + " has no tags" : "tags present:" + names);
}

Manifest OciLayout::read_manifest(const Descriptor& d) const {
  if (d.media_type == media::k_index) {
    throw Error(ErrorKind::input, "reference " + d.digest.str() + " in " + m_dir.string() +
                                      " is a multi-platform index; name a single-platform image");
  }
  return util::with_context("manifest " + d.digest.str(),
                            [&] { return manifest_from_json(parse_json(m_blobs.read_small(d.digest), "manifest")); });
}

ImageConfig OciLayout::read_config(const Manifest& m) const {
  return util::with_context("config " + m.config.digest.str(), [&] {
    return config_from_json(parse_json(m_blobs.read_small(m.config.digest), "config"));
  });
}

OciLayout::DirLock::DirLock(fs::path dir, bool created_dir)
    : m_dir(std::move(dir)), m_created_dir(created_dir),
      m_lock(m_dir / ".paddle-image.lock", util::FileLock::Mode::exclusive) {}

OciLayout::DirLock::~DirLock() {
  std::error_code ec;
  // Still holding the lock, nothing else writes here: the blob store's temporary
  // directory goes when empty (a dead writer's temporaries are cleared by the next one),
  // and so does the lock file (util::FileLock: a waiter that opened it locks a new one).
  fs::remove(m_dir / ".tmp", ec); // only if empty
  bool layout = fs::exists(m_dir / "oci-layout", ec);
  fs::remove(m_dir / ".paddle-image.lock", ec);
  if (!layout && m_created_dir) {
    fs::remove(m_dir / "blobs" / "sha256", ec); // what an interrupted creation leaves, if empty
    fs::remove(m_dir / "blobs", ec);
    fs::remove(m_dir, ec); // only if empty
  }
}

std::unique_ptr<OciLayout::DirLock> OciLayout::lock_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::input, "output '" + dir.string() + "' exists and is not a directory",
                "choose another path for oci:DIR");
  }
  bool created = fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorKind::io, "cannot create " + dir.string() + ": " + ec.message());
  }
  return std::make_unique<DirLock>(dir, created);
}

namespace {

// Digests a manifest-like JSON document refers to: an index's manifests, an image
// manifest's config and layers, an artifact's blobs (never its subject: a referrer
// keeps its subject alive, not the other way round).
std::vector<Digest> children_of(const nlohmann::json& j) {
  std::vector<Digest> out;
  auto take = [&](const nlohmann::json& d) {
    if (d.is_object() && d.contains("digest") && d["digest"].is_string()) {
      try {
        out.push_back(Digest::parse(d["digest"].get<std::string>()));
      } catch (const Error&) {
        // Not a digest this tool can address: nothing to keep for it.
      }
    }
  };
  for (const char* list : {"manifests", "layers", "blobs"}) {
    if (j.contains(list) && j[list].is_array()) {
      for (const auto& d : j[list]) {
        take(d);
      }
    }
  }
  if (j.contains("config")) {
    take(j["config"]);
  }
  return out;
}

std::optional<nlohmann::json> small_json(const BlobStore& blobs, const Digest& d) {
  std::error_code ec;
  auto size = fs::file_size(blobs.blob_path(d), ec);
  if (ec || size > (4u << 20)) {
    return std::nullopt;
  }
  try {
    auto j = nlohmann::json::parse(util::read_file(blobs.blob_path(d)));
    return j.is_object() ? std::optional<nlohmann::json>(j) : std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt; // a layer or other binary blob
  }
}

} // namespace

OciLayout::GcResult OciLayout::gc(bool dry_run) {
  Index index = read_index();
  std::set<std::string> reached;
  std::vector<Digest> todo;
  for (const auto& m : index.manifests) {
    todo.push_back(m.digest);
  }
  auto walk = [&] {
    while (!todo.empty()) {
      Digest d = todo.back();
      todo.pop_back();
      if (!reached.insert(d.str()).second) {
        continue;
      }
      if (auto j = small_json(m_blobs, d)) {
        for (auto& c : children_of(*j)) {
          todo.push_back(c);
        }
      }
    }
  };
  walk();
  // Every blob on disk, then referrers (signatures, attestations, SBOMs) whose subject
  // is kept, until nothing new is reached.
  std::vector<Digest> all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m_dir / "blobs" / "sha256", ec)) {
    std::string hex = e.path().filename().string();
    if (util::is_lower_hex(hex) && hex.size() == 64) {
      all.push_back(Digest::parse("sha256:" + hex));
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& d : all) {
      if (reached.count(d.str()) > 0) {
        continue;
      }
      auto j = small_json(m_blobs, d);
      if (j && j->contains("subject") && (*j)["subject"].is_object() && (*j)["subject"].contains("digest") &&
          reached.count((*j)["subject"]["digest"].get<std::string>()) > 0) {
        todo.push_back(d);
        walk();
        grew = true;
      }
    }
  }
  GcResult r;
  for (const auto& d : all) {
    if (reached.count(d.str()) > 0) {
      ++r.kept;
      continue;
    }
    fs::path p = m_blobs.blob_path(d);
    r.bytes += static_cast<std::int64_t>(fs::file_size(p, ec));
    r.removed.push_back(d);
    if (!dry_run && !fs::remove(p, ec) && ec) {
      throw Error(ErrorKind::io, "cannot remove " + p.string() + ": " + ec.message());
    }
  }
  if (!dry_run) {
    m_blobs.remove_stale_temps();
  }
  return r;
}

} // namespace oci
