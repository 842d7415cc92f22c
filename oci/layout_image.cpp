#include "oci/layout_image.hpp"

#include "oci/attachment.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <memory>

namespace oci {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

bool is_attachment_tag(const std::string& tag) {
  if (tag.rfind("sha256-", 0) != 0 || tag.size() < 7 + 64) {
    return false;
  }
  for (std::size_t i = 7; i < 7 + 64; ++i) {
    char c = tag[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  std::string rest = tag.substr(7 + 64);
  return rest.empty() || rest == ".sig" || rest == ".att" || rest == ".sbom";
}

std::vector<std::string> attachment_tags(const Digest& subject) {
  std::string base = subject.algorithm + "-" + subject.hex;
  return {base + ".sig", base + ".att", base + ".sbom", base};
}

namespace {

class LayoutImage : public Image {
public:
  LayoutImage(fs::path dir, const std::string& tag, std::string name)
      : m_layout(std::make_shared<OciLayout>(OciLayout::open_existing(dir))), m_name(std::move(name)) {
    Descriptor d = m_layout->resolve(tag);
    m_root = manifest(d);
  }
  const std::string& name() const override { return m_name; }
  const ManifestBlob& root() const override { return m_root; }
  ManifestBlob manifest(const Descriptor& d) const override {
    std::string bytes = m_layout->blobs().read_small(d.digest);
    return manifest_blob(std::move(bytes), d.media_type);
  }
  Reader open_blob(const Descriptor& d, std::int64_t offset) const override {
    return util::file_reader(checked_path(d), offset);
  }
  BlobHints hints(const Descriptor& d) const override {
    BlobHints h;
    h.file = checked_path(d);
    return h;
  }
  std::vector<Attachment> attachments(const Digest& subject) const override {
    std::vector<std::string> wanted = attachment_tags(subject);
    std::vector<Attachment> out;
    for (const auto& m : m_layout->read_index().manifests) {
      auto it = m.annotations.find(k_ref_name_annotation);
      if (it != m.annotations.end() && std::find(wanted.begin(), wanted.end(), it->second) != wanted.end()) {
        Descriptor d = m;
        d.annotations.erase(k_ref_name_annotation);
        out.push_back(Attachment{d, it->second});
      }
    }
    return out;
  }

private:
  // Blobs are named by their digest (a layout's promise); a file of the wrong size
  // is caught here, a wrong byte by whoever hashes the copy.
  fs::path checked_path(const Descriptor& d) const {
    fs::path p = m_layout->blobs().blob_path(d.digest);
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec || static_cast<std::int64_t>(size) != d.size) {
      throw Error(ErrorKind::integrity, m_name + ": blob " + d.digest.str() + " is missing or has the wrong size",
                  "the layout is incomplete; build or pull it again");
    }
    return p;
  }

  std::shared_ptr<OciLayout> m_layout;
  std::string m_name;
  ManifestBlob m_root;
};

// Puts one blob into the layout: a link to a verified local file, else a stream
// hashed and checked before it gets its name.
void put_blob(const Image& img, const Descriptor& d, BlobStore& store, const CopyOptions& opt) {
  if (store.has(d.digest)) {
    if (opt.progress) {
      opt.progress(d.digest, d.size, d.size);
    }
    return;
  }
  BlobHints h = img.hints(d);
  if (!h.file.empty() && h.verified) {
    store.put_file(d.digest, h.file);
    if (opt.progress) {
      opt.progress(d.digest, d.size, d.size);
    }
    return;
  }
  auto tmp = store.begin_write();
  VerifyingSink v(d, img.name(), [&](const char* p, std::size_t n) { tmp->write(p, n); });
  img.read_blob(d, [&](const char* p, std::size_t n) {
    v(p, n);
    if (opt.progress) {
      opt.progress(d.digest, v.bytes(), d.size);
    }
  });
  v.check();
  store.commit(*tmp, d.digest);
}

void put_image_blobs(const Image& img, const ManifestBlob& m, BlobStore& store, const CopyOptions& opt) {
  std::vector<Descriptor> blobs = image_blobs(m, img.name());
  util::parallel_for(blobs.size(), opt.jobs, [&](std::size_t i) { put_blob(img, blobs[i], store, opt); });
}

// The index.json entry of an image manifest carries its platform (from the config).
Descriptor top_descriptor(const ManifestBlob& top, const OciLayout& layout, const std::string& name) {
  Descriptor d = top.descriptor();
  if (top.is_index()) {
    return d;
  }
  Manifest m = manifest_from_json(parse_json(top.bytes, "manifest of " + name));
  if (m.config.media_type == media::k_config ||
      m.config.media_type == "application/vnd.docker.container.image.v1+json") {
    ImageConfig c = layout.read_config(m);
    d.platform = Platform{c.architecture, c.os, c.variant};
  }
  return d;
}

} // namespace

LayoutAttachments::LayoutAttachments(OciLayout& layout) : m_layout(layout) {}

std::optional<ManifestBlob> LayoutAttachments::tagged(const std::string& tag) {
  for (const auto& m : m_layout.read_index().manifests) {
    auto it = m.annotations.find(k_ref_name_annotation);
    if (it != m.annotations.end() && it->second == tag) {
      return manifest_blob(m_layout.blobs().read_small(m.digest), m.media_type);
    }
  }
  return std::nullopt;
}

std::string LayoutAttachments::read_small(const Descriptor& d) {
  return m_layout.blobs().read_small(d.digest);
}

void LayoutAttachments::put_blob(const Descriptor& d, const std::string& bytes) {
  Descriptor written = m_layout.blobs().put_bytes(d.media_type, bytes);
  if (written.digest != d.digest) {
    throw Error(ErrorKind::internal, "blob bytes do not match " + d.digest.str());
  }
}

void LayoutAttachments::put_manifest(const std::string& tag, const ManifestBlob& m) {
  m_layout.blobs().put_bytes(m.media_type, m.bytes);
  m_layout.add_manifest(m.descriptor(), {tag});
}

ImagePtr open_layout_image(const fs::path& dir, const std::string& tag, const std::string& name) {
  return std::make_shared<LayoutImage>(dir, tag, name);
}

CopyResult write_layout(const Image& img, const fs::path& dir, const std::vector<std::string>& tags,
                        const CopyOptions& opt) {
  CopyPlan plan = plan_copy(img, opt);
  CopyResult res;
  res.manifest = plan.top;
  auto lock = OciLayout::lock_dir(dir);
  auto layout = OciLayout::open_or_create(dir);
  layout.blobs().remove_stale_temps();
  for (const ManifestBlob& m : plan.images) {
    put_image_blobs(img, m, layout.blobs(), opt);
    layout.blobs().put_bytes(m.media_type, m.bytes);
  }
  if (plan.images.size() > 1 || plan.top.digest != plan.images.front().digest) {
    layout.blobs().put_bytes(plan.top.media_type, plan.top.bytes);
  }
  for (const auto& a : plan.attached) {
    if (!a.manifest.is_index()) {
      put_image_blobs(img, a.manifest, layout.blobs(), opt);
    }
    layout.blobs().put_bytes(a.manifest.media_type, a.manifest.bytes);
  }
  layout.add_manifest(top_descriptor(plan.top, layout, img.name()), tags);
  // Signatures and attestations merge with what the layout has under the same tag.
  LayoutAttachments store(layout);
  for (const auto& a : plan.attached) {
    if (a.attachment.tag.empty()) {
      continue;
    }
    if (is_mergeable_attachment_tag(a.attachment.tag)) {
      merge_attachment(store, a.attachment.tag, a.manifest, img.name());
    } else {
      layout.add_manifest(a.manifest.descriptor(), {a.attachment.tag});
    }
    ++res.attachments;
  }
  for (const auto& t : tags) {
    res.refs.push_back("oci:" + dir.string() + ":" + t + "@" + plan.top.digest.str());
  }
  if (tags.empty()) {
    res.refs.push_back("oci:" + dir.string() + "@" + plan.top.digest.str());
  }
  return res;
}

} // namespace oci
