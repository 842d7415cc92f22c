#include "imageio/sinks/sinks.hpp"
#include "oci/layout_image.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio::sinks {

namespace {

// An OCI image layout directory: blobs linked or streamed in, index.json last.
class LayoutSink : public Destination {
public:
  LayoutSink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}
  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    return util::with_context("writing " + m_ref.str(),
                              [&] { return WriteResult(oci::write_layout(image, m_ref.path, tags, m_o.copy)); });
  }

private:
  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> layout_sink(const oci::ImageRef& ref, DestinationOptions o) {
  return std::make_unique<LayoutSink>(ref, std::move(o));
}

} // namespace imageio::sinks
