#pragma once
// The copy use case behind `push`, `pull` and `copy`: the references checked for the
// command before anything is opened, the source opened, the tags chosen by the one tag
// policy (the source's own standing in), an archive destination's image name found,
// and the image published (imageio/publish.hpp).
#include "imageio/destination.hpp"
#include "imageio/publish.hpp"
#include "imageio/source.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace imageio {

enum class CopyMode { push, pull, copy };

struct CopyRequest {
  CopyMode mode = CopyMode::copy;
  std::string src, dst;          // as written ("source", "destination" in errors)
  std::vector<std::string> tags; // --tag
  std::string name;              // --name: a docker-archive destination's repository
};

// The references of a copy, checked for its mode: a push writes to a registry, a pull
// reads from one, a destination takes no digest, each --tag is valid (usage errors).
struct CopyRefs {
  oci::ImageRef src, dst;
  // The host whose credentials the command starts with: the destination's, else the
  // source's.
  std::string credential_host() const;
};
CopyRefs parse_copy(const CopyRequest& req);

struct CopyRun {
  oci::CopyOptions copy;      // platform selection, jobs, progress
  Connect connect;            // the registries' hosts
  std::int64_t archive_mtime; // a docker-archive's member times
  std::function<void(const std::string&)> info = [](const std::string&) {};
};

// Opens the source (an explicit --platform is checked first, before anything is
// written), says "copying ...", and publishes the image with its tags.
Published copy_image(const CopyRequest& req, const CopyRefs& refs, const CopyRun& run);

// The repository of a docker-archive destination: --name, else the source registry
// reference, else the source archive's own RepoTags (`archive_repo`), else the image's
// org.opencontainers.image.title; none of them is a usage error asking for --name.
std::string archive_repository(const oci::ImageRef& src_ref, const std::string& archive_repo, const oci::Manifest& m,
                               const oci::ImageConfig& cfg, const std::string& name_flag);

} // namespace imageio
