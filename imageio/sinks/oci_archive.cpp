#include "layers/oci_archive.hpp"
#include "imageio/sinks/sinks.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio::sinks {

namespace {

// The OCI layout in one tar that `ctr images import`, skopeo and podman read. Each
// index.json entry is named for skopeo and podman by its tag
// (org.opencontainers.image.ref.name) and, with an image name, for containerd
// (io.containerd.image.name "REGISTRY/REPO:TAG"): one entry per tag, so an image with
// one tag is read without one by skopeo, podman load and ctr alike. The by-digest name
// a pod pinned by digest needs comes from `ctr images import --digests --base-name`.
class OciArchiveSink : public Destination {
public:
  OciArchiveSink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}

  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    layers::OciArchiveOptions ao;
    ao.mtime = m_o.archive_mtime;
    ao.copy = m_o.copy;
    ao.omit = m_o.omit;
    WriteResult r;
    if (m_o.image_name) {
      std::string repo = m_o.image_name->name();
      oci::Digest top = m_o.copy.all_platforms && image.root().is_index() ? image.root().digest
                        : m_o.selected                                    ? m_o.selected->digest
                                       : oci::select_platform(image, m_o.copy).digest;
      for (const auto& t : tags) {
        ao.entries.push_back({{k_containerd_name_annotation, repo + ":" + t}, {oci::k_ref_name_annotation, t}});
        r.names.push_back(repo + ":" + t);
      }
      // No entry of its own: skopeo, podman load and every containers/image reader take
      // an archive without a tag only when index.json has one entry. `ctr images import
      // --digests --base-name REPO` makes this name from the tag's entry.
      r.names.push_back(repo + "@" + top.str());
    } else {
      for (const auto& t : tags) {
        ao.entries.push_back({{oci::k_ref_name_annotation, t}});
      }
    }
    layers::OciArchiveResult w =
        util::with_context("writing " + m_ref.str(), [&] { return layers::write_oci_archive(image, m_ref.path, ao); });
    r.manifest = w.manifest;
    for (const auto& t : tags) {
      r.refs.push_back("oci-archive:" + m_ref.path + ":" + t + "@" + w.manifest.digest.str());
    }
    if (tags.empty()) {
      r.refs.push_back("oci-archive:" + m_ref.path + "@" + w.manifest.digest.str());
    }
    r.written = std::move(w.written);
    r.omitted = std::move(w.omitted);
    r.archive_bytes = w.archive_bytes;
    return r;
  }

private:
  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> oci_archive_sink(const oci::ImageRef& ref, DestinationOptions o) {
  return std::make_unique<OciArchiveSink>(ref, std::move(o));
}

} // namespace imageio::sinks
