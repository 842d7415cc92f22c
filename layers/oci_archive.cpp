#include "layers/oci_archive.hpp"

#include "layers/tar.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

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

} // namespace

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
