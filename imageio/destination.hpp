#pragma once
// Where an image goes, whatever names it: an `oci:` layout, a `docker-archive:` file or
// a registry repository. open_destination gives one sink per kind, each writing any
// oci::Image under a list of tags and returning what it wrote (the counterpart of
// open_source). build (-o and --push), copy, push and pull write through it; the
// docker-archive's repository naming is here once. A blob's BlobHints (its local file,
// the repository to mount it from) reach the writers unchanged.
#include "imageio/source.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace imageio {

struct DestinationOptions {
  oci::CopyOptions copy; // platform selection, jobs, progress, attachments
  Connect connect;       // a registry destination's host (with the command's credentials)
  // A docker-archive: the repository of its RepoTags ("REPO:TAG" per tag; none when
  // empty) and every member's mtime.
  std::string archive_repository;
  std::int64_t archive_mtime = 0;
};

class Destination {
public:
  virtual ~Destination() = default;
  // Writes `image` under `tags` (a registry: none means by digest only); the result
  // names the manifest written and the references a registry now serves. An archive
  // is written whole, once, by this call. Errors carry the context "writing REF" or
  // "pushing to HOST/REPO".
  virtual oci::CopyResult write(const oci::Image& image, const std::vector<std::string>& tags) = 0;
};

// Throws Error(usage) for a registry destination without `connect`.
std::unique_ptr<Destination> open_destination(const oci::ImageRef& ref, DestinationOptions options);

// "host/path" as a docker-archive's RepoTags spell it ("team/app" on Docker Hub).
std::string repo_tag_name(const oci::ImageRef& ref);

} // namespace imageio
