#pragma once
// The registry as a source and a destination of the image model: a repository's
// image as an oci::Image, and the one push writer that takes any oci::Image. A push
// sends what the registry lacks (HEAD first; a blob of the same registry is mounted
// across repositories; registry to registry, blobs stream through without being
// stored), in parallel, then manifests, children before an index, then attachments.
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

// Pushes img to reg/repo under each tag (no tags: by digest only).
TransferResult push_image(const oci::Image& img, const std::shared_ptr<Registry>& reg, const std::string& repo,
                          const std::vector<std::string>& tags, const TransferOptions& opt);

} // namespace registry
