#include "imageio/destination.hpp"

#include "layers/docker_archive.hpp"
#include "oci/layout_image.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio {

using util::Error;
using util::ErrorKind;

namespace {

// One sink for the three kinds a reference can name; the kind picks the writer.
class Sink : public Destination {
public:
  Sink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}
  oci::CopyResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    switch (m_ref.kind) {
    case oci::ImageRef::Kind::registry:
      return util::with_context("pushing to " + m_ref.registry + "/" + m_ref.repository, [&] {
        return registry::push_image(image, m_o.connect(m_ref.registry), m_ref.repository, tags, m_o.copy);
      });
    case oci::ImageRef::Kind::oci_layout:
      return util::with_context("writing " + m_ref.str(),
                                [&] { return oci::write_layout(image, m_ref.path, tags, m_o.copy); });
    case oci::ImageRef::Kind::docker_archive:
      break;
    }
    layers::ArchiveOptions ao;
    if (!m_o.archive_repository.empty()) {
      for (const auto& t : tags) {
        ao.repo_tags.push_back(m_o.archive_repository + ":" + t);
      }
    }
    ao.mtime = m_o.archive_mtime;
    ao.copy = m_o.copy;
    return util::with_context("writing " + m_ref.str(),
                              [&] { return layers::write_docker_archive(image, m_ref.path, ao); });
  }

private:
  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> open_destination(const oci::ImageRef& ref, DestinationOptions options) {
  if (ref.kind == oci::ImageRef::Kind::registry && !options.connect) {
    throw Error(ErrorKind::usage, "this command cannot push to a registry");
  }
  return std::make_unique<Sink>(ref, std::move(options));
}

std::string repo_tag_name(const oci::ImageRef& ref) {
  return ref.registry == oci::k_docker_hub ? ref.repository : ref.registry + "/" + ref.repository;
}

} // namespace imageio
