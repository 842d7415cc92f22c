#pragma once
// The registry as a source and a destination of the image model: a repository's
// image as an oci::Image, and the one push writer that takes any oci::Image. A push
// sends what the registry lacks (HEAD first; a blob of the same registry is mounted
// across repositories; registry to registry, blobs stream through without being
// stored), in parallel, then manifests, children before an index, then attachments.
#include "oci/attachment.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"
#include "registry/client.hpp"

#include <memory>
#include <string>
#include <vector>

namespace registry {

using TransferOptions = oci::CopyOptions;
using TransferResult = oci::CopyResult;

// The image ref names in reg (by digest when it has one, else by tag).
oci::ImagePtr open_registry_image(std::shared_ptr<Registry> reg, const oci::ImageRef& ref);

// Pushes img to reg/repo under each tag (no tags: by digest only). A manifest reg has
// is taken as proof of its blobs, unless `check_blobs`: then every blob is HEADed and
// what is missing uploaded (repairing a mirror that lost one).
TransferResult push_image(const oci::Image& img, const std::shared_ptr<Registry>& reg, const std::string& repo,
                          const std::vector<std::string>& tags, const TransferOptions& opt, bool check_blobs = false);

// A repository as a place to add signatures and attestations (tags "sha256-<hex>.sig"
// and ".att"; a 404 on the tag means none yet).
class RegistryAttachments : public oci::AttachmentStore {
public:
  RegistryAttachments(std::shared_ptr<Registry> reg, std::string repo);
  std::optional<oci::ManifestBlob> tagged(const std::string& tag) override;
  std::string read_small(const oci::Descriptor& d) override;
  void put_blob(const oci::Descriptor& d, const std::string& bytes) override;
  void put_manifest(const std::string& tag, const oci::ManifestBlob& m) override;

private:
  std::shared_ptr<Registry> m_reg;
  std::string m_repo;
};

} // namespace registry
