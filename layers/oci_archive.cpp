#include "layers/oci_archive.hpp"

#include "layers/docker_archive.hpp"
#include "layers/tar.hpp"
#include "oci/layout.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <optional>
#include <set>

namespace layers {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::string blob_member(const oci::Digest& d) {
  return "blobs/" + d.algorithm + "/" + d.hex;
}

// The index.json entry of an image manifest carries its platform (from the config).
std::optional<oci::Platform> manifest_platform(const oci::Image& img, const oci::ManifestBlob& m) {
  oci::Manifest man = oci::manifest_from_json(oci::parse_json(m.bytes, "manifest of " + img.name()));
  if (man.config.media_type != oci::media::k_config &&
      man.config.media_type != "application/vnd.docker.container.image.v1+json") {
    return std::nullopt; // an artifact, not a runnable image
  }
  oci::ImageConfig c = oci::read_config(img, man);
  return oci::Platform{c.architecture, c.os, c.variant};
}

// A manifest or index.json past this is not one (the layout reader's bound too).
constexpr std::int64_t k_max_document = 16 << 20;

} // namespace

OciArchiveImage::OciArchiveImage(const fs::path& file, const std::string& tag, std::string name)
    : m_file(file), m_name(std::move(name)) {
  std::optional<Member> index;
  bool layout_marker = false;
  for (const TarIndexEntry& e : index_tar(file)) {
    if (e.type != '0' && e.type != '\0') {
      continue;
    }
    if (e.path == "index.json") {
      index = Member{e.offset, e.size};
    } else if (e.path == "oci-layout") {
      layout_marker = true;
    } else if (e.path.rfind("blobs/", 0) == 0) {
      std::string rest = e.path.substr(6);
      auto slash = rest.find('/');
      if (slash != std::string::npos) {
        m_blobs[rest.substr(0, slash) + ":" + rest.substr(slash + 1)] = Member{e.offset, e.size};
      }
    }
  }
  if (!index || !layout_marker) {
    throw Error(ErrorKind::input,
                m_name + ": no " + std::string(index ? "oci-layout" : "index.json") + " member, so not an oci-archive",
                "write one with `paddle-image copy IMAGE oci-archive:FILE` or `skopeo copy ... oci-archive:FILE`");
  }
  oci::Index idx = oci::index_from_json(oci::parse_json(read_member(*index, "index.json"), m_name + ": index.json"));
  oci::Descriptor top = oci::select_entry(idx, tag, "oci-archive " + file.string(), "oci-archive:" + file.string());
  for (const auto& e : idx.manifests) {
    auto cd_name = e.annotations.find("io.containerd.image.name");
    if (e.digest == top.digest && cd_name != e.annotations.end() && cd_name->second.find('@') == std::string::npos) {
      m_repo_tags.push_back(cd_name->second);
    }
  }
  m_root = manifest(top);
}

const OciArchiveImage::Member& OciArchiveImage::find(const oci::Descriptor& d) const {
  auto it = m_blobs.find(d.digest.str());
  if (it == m_blobs.end()) {
    throw Error(ErrorKind::input, m_name + " has no blob " + d.digest.str(),
                "the archive is incomplete (a thin export leaves layers out: import it where they are)");
  }
  if (it->second.size != d.size) {
    throw Error(ErrorKind::integrity,
                m_name + ": blob " + d.digest.str() + " is " + std::to_string(it->second.size) + " bytes, not " +
                    std::to_string(d.size),
                "the archive is damaged; write it again");
  }
  return it->second;
}

std::string OciArchiveImage::read_member(const Member& m, const std::string& what) const {
  if (m.size > k_max_document) {
    throw Error(ErrorKind::input, m_name + ": " + what + " is too large (" + std::to_string(m.size) + " bytes)");
  }
  return util::read_file_range(m_file, m.offset, m.size);
}

oci::ManifestBlob OciArchiveImage::manifest(const oci::Descriptor& d) const {
  std::string bytes = read_member(find(d), "manifest " + d.digest.str());
  if (util::sha256_hex(bytes) != d.digest.hex) {
    throw Error(ErrorKind::integrity, m_name + ": manifest " + d.digest.str() + " does not match its digest",
                "the archive is damaged; write it again");
  }
  return oci::manifest_blob(std::move(bytes), d.media_type);
}

oci::Reader OciArchiveImage::open_blob(const oci::Descriptor& d, std::int64_t offset) const {
  const Member& m = find(d);
  return util::file_reader(m_file, m.offset + offset, m.size - offset);
}

oci::BlobHints OciArchiveImage::hints(const oci::Descriptor& d) const {
  find(d); // a missing or short blob is named before a copy starts
  oci::BlobHints h;
  h.verified = false; // its bytes are hashed by whoever copies them
  return h;
}

OciArchiveResult write_oci_archive(const oci::Image& img, const fs::path& out, const OciArchiveOptions& opt) {
  oci::CopyOptions copy = opt.copy;
  copy.attachments = false; // a node's store has no use for signatures; ctr import ignores them
  oci::CopyPlan plan = oci::plan_copy(img, copy);
  OciArchiveResult res;
  res.manifest = plan.top;

  // What goes in, in order: every image manifest's config and layers (each digest
  // once), the manifests, the top index. Only layers can be left out.
  struct Member {
    oci::Descriptor desc;
    const std::string* bytes = nullptr; // a manifest held in memory
  };
  std::vector<Member> members;
  std::set<std::string> seen;
  for (const oci::ManifestBlob& m : plan.images) {
    std::vector<oci::Descriptor> blobs = oci::image_blobs(m, img.name());
    for (std::size_t i = 0; i < blobs.size(); ++i) {
      const oci::Descriptor& d = blobs[i];
      if (!seen.insert(d.digest.str()).second) {
        continue;
      }
      bool is_config = i == 0; // image_blobs lists the config first
      if (!is_config && opt.omit.count(d.digest.str()) != 0) {
        res.omitted.push_back(d);
        continue;
      }
      members.push_back({d, nullptr});
    }
    if (seen.insert(m.digest.str()).second) {
      members.push_back({m.descriptor(), &m.bytes});
    }
  }
  if (seen.insert(plan.top.digest.str()).second) {
    members.push_back({plan.top.descriptor(), &plan.top.bytes});
  }

  oci::Descriptor entry = plan.top.descriptor();
  if (!plan.top.is_index()) {
    entry.platform = manifest_platform(img, plan.top);
  }
  oci::Index index;
  if (opt.entries.empty()) {
    index.manifests.push_back(entry);
  }
  for (const auto& a : opt.entries) {
    entry.annotations = a;
    index.manifests.push_back(entry);
  }

  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    throw Error(ErrorKind::usage, "oci-archive output '" + out.string() + "' is a directory",
                "name a file, e.g. -o image.tar");
  }
  if (!out.parent_path().empty()) {
    util::create_dirs(out.parent_path(), "output directory");
  }
  util::remove_stale_temps_beside(out);
  util::AtomicFile file(out);
  std::int64_t total = 0;
  ByteSink sink = [&](const char* d, std::size_t n) {
    file.write(d, n);
    total += static_cast<std::int64_t>(n);
  };
  TarBuilder tar(opt.mtime, sink);
  tar.add_bytes("oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  tar.add_bytes("index.json", oci::canonical(oci::to_json(index)));
  tar.add_dir("blobs");
  std::set<std::string> algs;
  for (const auto& m : members) {
    if (algs.insert(m.desc.digest.algorithm).second) {
      tar.add_dir("blobs/" + m.desc.digest.algorithm);
    }
  }
  for (const auto& m : members) {
    const oci::Descriptor& d = m.desc;
    tar.add_stream(blob_member(d.digest), d.size, [&](const ByteSink& member) {
      // Hashed while it streams: a source that serves other bytes fails the archive,
      // which is then never renamed into place.
      oci::VerifyingSink v(d, img.name(), [&](const char* p, std::size_t n) { member(p, n); });
      if (m.bytes != nullptr) {
        v(m.bytes->data(), m.bytes->size());
      } else {
        img.read_blob(d, [&](const char* p, std::size_t n) {
          v(p, n);
          if (opt.copy.progress) {
            opt.copy.progress(d.digest, v.bytes(), d.size);
          }
        });
      }
      v.check();
    });
    res.written.push_back(d);
  }
  tar.finish();
  file.commit();
  res.archive_bytes = total;
  return res;
}

} // namespace layers
