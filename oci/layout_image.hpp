#pragma once
// The OCI layout as an image source and as a destination.
#include "oci/attachment.hpp"
#include "oci/image.hpp"
#include "oci/layout.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace oci {

// The image under `tag` in the layout at dir (empty tag: the only image). `name` is
// used in messages.
ImagePtr open_layout_image(const std::filesystem::path& dir, const std::string& tag, const std::string& name);

// Writes img into the layout at dir (created when missing) under each tag: blobs
// first (linked when the source has them as verified files, else streamed, hashed
// and checked), then manifests, then index.json atomically; attachments go along
// under their own tags.
CopyResult write_layout(const Image& img, const std::filesystem::path& dir, const std::vector<std::string>& tags,
                        const CopyOptions& opt);

// The layout as a place to add signatures and attestations (callers hold lock_dir).
class LayoutAttachments : public AttachmentStore {
public:
  explicit LayoutAttachments(OciLayout& layout);
  std::optional<ManifestBlob> tagged(const std::string& tag) override;
  std::string read_small(const Descriptor& d) override;
  void put_blob(const Descriptor& d, const std::string& bytes) override;
  void put_manifest(const std::string& tag, const ManifestBlob& m) override;

private:
  OciLayout& m_layout;
};

} // namespace oci
