#pragma once
// Image sources of copy rules (`image: REF` with `from:` a path in it, docs/spec.md
// "Files from another image"): the image opened as a base is (a layout's blobs checked
// against their digests, a registry's streamed and verified), its file tree read once
// and cached (layers::BaseView), the rule's path resolved in that tree (symlinks within
// the image), and only the layers that hold the path's entries read, each into the
// cache's sources directory, keyed by the manifest digest and the path.
#include "builder/layer_build.hpp"
#include "spec/spec.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace builder {

// The image's manifest digest for `platform`, as `lock --sources` pins it.
std::string image_source_digest(const spec::ImageSourceSpec& im, const oci::Platform& platform, const BuildOptions& o,
                                const Events& ev, const std::string& origin);

// The rule's path laid out from its image: a file or directory in the cache's sources
// directory named as the path's last component. Throws Error(input) naming the rule for
// an image that no longer has the pinned digest, a path the image lacks, a link that
// leaves the image; Error(integrity) for a blob that is not its digest. `report` gets
// what was read.
std::filesystem::path lay_out_image(const spec::CopySpec& cs, const LayerContext& cx, nlohmann::json& report);

} // namespace builder
