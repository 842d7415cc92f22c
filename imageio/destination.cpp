#include "imageio/destination.hpp"

#include "layers/docker_archive.hpp"
#include "layers/oci_archive.hpp"
#include "oci/layout_image.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

namespace imageio {

using util::Error;
using util::ErrorKind;

namespace {

// The sink for the three kinds a reference can name; the kind picks the writer.
class Sink : public Destination {
public:
  Sink(oci::ImageRef ref, DestinationOptions o) : m_ref(std::move(ref)), m_o(std::move(o)) {}
  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    switch (m_ref.kind) {
    case oci::ImageRef::Kind::registry:
      return util::with_context("pushing to " + m_ref.registry + "/" + m_ref.repository, [&] {
        return WriteResult(registry::push_image(image, m_o.connect(m_ref.registry), m_ref.repository, tags, m_o.copy));
      });
    case oci::ImageRef::Kind::oci_layout:
      return util::with_context("writing " + m_ref.str(),
                                [&] { return WriteResult(oci::write_layout(image, m_ref.path, tags, m_o.copy)); });
    case oci::ImageRef::Kind::docker_archive:
      break;
    }
    return write_docker_archive(image, tags);
  }

private:
  WriteResult write_docker_archive(const oci::Image& image, const std::vector<std::string>& tags) const {
    layers::ArchiveOptions ao;
    if (!m_o.archive_repository.empty()) {
      for (const auto& t : tags) {
        ao.repo_tags.push_back(m_o.archive_repository + ":" + t);
      }
    }
    ao.mtime = m_o.archive_mtime;
    ao.copy = m_o.copy;
    WriteResult r(util::with_context("writing " + m_ref.str(),
                                     [&] { return layers::write_docker_archive(image, m_ref.path, ao); }));
    std::error_code ec;
    r.archive_bytes = static_cast<std::int64_t>(std::filesystem::file_size(m_ref.path, ec));
    return r;
  }

  oci::ImageRef m_ref;
  DestinationOptions m_o;
};

// The OCI archive containerd imports, a file no reference names.
class OciArchiveSink : public Destination {
public:
  OciArchiveSink(std::filesystem::path file, DestinationOptions o) : m_file(std::move(file)), m_o(std::move(o)) {}

  // Index entries as containerd's import names images: io.containerd.image.name
  // "REPO:TAG" per tag, and "REPO@DIGEST" by the top manifest's digest, so a pod pinned
  // by digest finds it too.
  WriteResult write(const oci::Image& image, const std::vector<std::string>& tags) override {
    layers::OciArchiveOptions ao;
    ao.mtime = m_o.archive_mtime;
    ao.copy = m_o.copy;
    ao.omit = m_o.omit;
    WriteResult r;
    if (!m_o.archive_repository.empty()) {
      oci::Digest top = m_o.copy.all_platforms && image.root().is_index() ? image.root().digest
                        : m_o.selected                                    ? m_o.selected->digest
                                       : oci::select_platform(image, m_o.copy).digest;
      for (const auto& t : tags) {
        std::string name = m_o.archive_repository + ":" + t;
        ao.entries.push_back({{k_containerd_name_annotation, name}, {oci::k_ref_name_annotation, t}});
        r.refs.push_back(name);
      }
      std::string by_digest = m_o.archive_repository + "@" + top.str();
      ao.entries.push_back({{k_containerd_name_annotation, by_digest}, {oci::k_ref_name_annotation, by_digest}});
      r.refs.push_back(by_digest);
    }
    layers::OciArchiveResult w =
        util::with_context("writing " + m_file.string(), [&] { return layers::write_oci_archive(image, m_file, ao); });
    r.manifest = w.manifest;
    r.written = std::move(w.written);
    r.omitted = std::move(w.omitted);
    r.archive_bytes = w.archive_bytes;
    return r;
  }

private:
  std::filesystem::path m_file;
  DestinationOptions m_o;
};

} // namespace

std::unique_ptr<Destination> open_destination(const oci::ImageRef& ref, DestinationOptions options) {
  if (ref.kind == oci::ImageRef::Kind::registry && !options.connect) {
    throw Error(ErrorKind::usage, "this command cannot push to a registry");
  }
  return std::make_unique<Sink>(ref, std::move(options));
}

std::unique_ptr<Destination> open_oci_archive(const std::filesystem::path& file, DestinationOptions options) {
  return std::make_unique<OciArchiveSink>(file, std::move(options));
}

std::vector<std::string> destination_tags(const oci::ImageRef& dst, const std::vector<std::string>& tags,
                                          const std::vector<std::string>& fallback) {
  std::vector<std::string> out;
  if (!dst.tag.empty() && !dst.tag_defaulted) {
    out.push_back(dst.tag);
  }
  for (const auto& t : tags) {
    if (std::find(out.begin(), out.end(), t) == out.end()) {
      out.push_back(t);
    }
  }
  return out.empty() ? fallback : out;
}

std::string repo_tag_name(const oci::ImageRef& ref) {
  return ref.registry == oci::k_docker_hub ? ref.repository : ref.registry + "/" + ref.repository;
}

} // namespace imageio
