#include "imageio/sinks/sinks.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio::sinks {

namespace {

// A registry repository: blobs the registry lacks (mounted where it has them in
// another repository, streamed otherwise), then manifests, then each tag.
class RegistrySink : public Destination {
public:
  RegistrySink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}
  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    return util::with_context("pushing to " + m_ref.registry + "/" + m_ref.repository, [&] {
      return WriteResult(
          registry::push_image(image, m_o.connect(m_ref.registry), m_ref.repository, tags, m_o.copy, m_o.check_blobs));
    });
  }

private:
  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> registry_sink(const oci::ImageRef& ref, DestinationOptions o) {
  return std::make_unique<RegistrySink>(ref, std::move(o));
}

} // namespace imageio::sinks
