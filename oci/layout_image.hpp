#pragma once
// The OCI layout as an image source and as a destination.
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

} // namespace oci
