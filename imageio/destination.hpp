#pragma once
// Where an image goes, whatever names it: an `oci:` layout, a `docker-archive:` file,
// an `oci-archive:` file (what a node's containerd imports) or a registry repository.
// open_destination gives the sink of the reference's kind (imageio/sinks/, one file
// each), writing any oci::Image under a list of tags and returning what it wrote (the
// counterpart of open_source). Commands do not call it directly: they hand an image
// and its destinations to imageio::publish (imageio/publish.hpp), which applies the
// one tag policy (destination_tags). A blob's BlobHints (its local file, the
// repository to mount it from) reach the writers unchanged.
#include "imageio/source.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace imageio {

struct DestinationOptions {
  oci::CopyOptions copy; // platform selection, jobs, progress, attachments
  Connect connect;       // a registry destination's host (with the command's credentials)
  // A registry: HEAD every blob even where the registry has the manifest, uploading
  // what is missing (a mirror that lost a blob is repaired; warm push --to).
  bool check_blobs = false;
  // An archive's image name (a registry reference), each format spelling it its own
  // way: a docker-archive's RepoTags "REPO:TAG" per tag in Docker's short form
  // (repo_tag_name), an oci-archive's containerd names "REGISTRY/REPO:TAG" per tag and
  // "REGISTRY/REPO@DIGEST". None: a docker-archive without RepoTags, an oci-archive
  // named by its tags only.
  std::optional<oci::ImageRef> image_name;
  std::int64_t archive_mtime = 0; // an archive: every member's mtime
  std::set<std::string> omit;     // an oci-archive: layer digests left out (a thin archive)
  // An oci-archive: the platform's manifest when the caller has chosen it already
  // (oci::select_platform with `copy`), so it is not fetched again for the names.
  std::optional<oci::ManifestBlob> selected;
};

// An archive's blobs beside the CopyResult.
struct WriteResult : oci::CopyResult {
  WriteResult() = default;
  explicit WriteResult(oci::CopyResult c) : oci::CopyResult(std::move(c)) {}
  std::vector<oci::Descriptor> written; // an oci-archive: the blobs it holds (manifests included)
  std::vector<oci::Descriptor> omitted; // an oci-archive: the layers left out (DestinationOptions::omit)
  std::vector<std::string> names;       // an oci-archive: the containerd image names of its entries
  std::int64_t archive_bytes = 0;       // an archive: the file's size
};

// The "io.containerd.image.name" annotation an oci-archive's index entries carry.
inline constexpr const char* k_containerd_name_annotation = "io.containerd.image.name";

class Destination {
public:
  virtual ~Destination() = default;
  // Writes `image` under `tags` (a registry: none means by digest only); the result
  // names the manifest written and the references a registry now serves. An archive
  // is written whole, once, by this call. Errors carry the context "writing REF" or
  // "pushing to HOST/REPO" (an oci-archive: "writing FILE").
  virtual WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) = 0;
};

// Throws Error(usage) for a registry destination without `connect`.
std::unique_ptr<Destination> open_destination(const oci::ImageRef& ref, DestinationOptions options);

// The tag policy of every command that writes an image (docs/references.md, "Tag
// precedence"): the tag written in the destination (a registry's assumed "latest" is
// not written), then each --tag not already there; when neither gives one, `fallback`
// (build: image.tags, else latest; copy: the source's tags, else latest; warm export:
// the image reference's tag without --name, none with it: the image is named by
// digest only; warm push: none).
std::vector<std::string> destination_tags(const oci::ImageRef& dst, const std::vector<std::string>& tags,
                                          const std::vector<std::string>& fallback);

// "host/path" as a docker-archive's RepoTags spell it ("team/app" and "ubuntu" on
// Docker Hub).
std::string repo_tag_name(const oci::ImageRef& ref);

} // namespace imageio
