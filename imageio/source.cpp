#include "imageio/source.hpp"

#include "layers/docker_archive.hpp"
#include "layers/oci_archive.hpp"
#include "oci/layout_image.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"

namespace imageio {

oci::ImagePtr open_source(const oci::ImageRef& ref, const Connect& connect,
                          std::vector<std::string>* archive_repo_tags) {
  switch (ref.kind) {
  case oci::ImageRef::Kind::registry:
    if (!connect) {
      throw util::Error(util::ErrorKind::usage, ref.str() + " is in a registry, which this command cannot reach",
                        "copy it into a local layout (paddle-image copy " + ref.str() + " oci:DIR:TAG) first");
    }
    return registry::open_registry_image(connect(ref.registry), ref);
  case oci::ImageRef::Kind::oci_layout:
    return oci::open_layout_image(ref.path, ref.tag, ref.str());
  case oci::ImageRef::Kind::oci_archive: {
    auto img = std::make_shared<layers::OciArchiveImage>(ref.path, ref.tag, ref.str());
    if (archive_repo_tags != nullptr) {
      *archive_repo_tags = img->repo_tags();
    }
    return img;
  }
  case oci::ImageRef::Kind::docker_archive:
    break;
  }
  auto img = std::make_shared<layers::ArchiveImage>(ref.path, ref.str());
  if (archive_repo_tags != nullptr) {
    *archive_repo_tags = img->repo_tags();
  }
  return img;
}

} // namespace imageio
