#include "layers/docker_archive.hpp"
#include "imageio/sinks/sinks.hpp"
#include "util/error.hpp"

#include <system_error>
#include <utility>

namespace imageio::sinks {

namespace {

// The `docker load` tar: one platform, RepoTags "REPO:TAG" per tag in Docker's short
// spelling of the image name (repo_tag_name), none without a name.
class DockerArchiveSink : public Destination {
public:
  DockerArchiveSink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}
  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    layers::ArchiveOptions ao;
    if (m_o.image_name) {
      for (const auto& t : tags) {
        ao.repo_tags.push_back(repo_tag_name(*m_o.image_name) + ":" + t);
      }
    }
    ao.mtime = m_o.archive_mtime;
    ao.copy = m_o.copy;
    ao.copy.attachments = false;
    WriteResult r(util::with_context("writing " + m_ref.str(),
                                     [&] { return layers::write_docker_archive(image, m_ref.path, ao); }));
    std::error_code ec;
    r.archive_bytes = static_cast<std::int64_t>(std::filesystem::file_size(m_ref.path, ec));
    return r;
  }

private:
  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> docker_archive_sink(const oci::ImageRef& ref, DestinationOptions o) {
  return std::make_unique<DockerArchiveSink>(ref, std::move(o));
}

} // namespace imageio::sinks
