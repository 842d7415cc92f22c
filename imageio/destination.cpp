#include "imageio/destination.hpp"

#include "imageio/sinks/sinks.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <utility>

namespace imageio {

using util::Error;
using util::ErrorKind;

std::unique_ptr<Destination> open_destination(const oci::ImageRef& ref, DestinationOptions options) {
  switch (ref.kind) {
  case oci::ImageRef::Kind::registry:
    if (!options.connect) {
      throw Error(ErrorKind::usage, "this command cannot push to a registry");
    }
    return sinks::registry_sink(ref, std::move(options));
  case oci::ImageRef::Kind::oci_layout:
    return sinks::layout_sink(ref, std::move(options));
  case oci::ImageRef::Kind::docker_archive:
    return sinks::docker_archive_sink(ref, std::move(options));
  case oci::ImageRef::Kind::oci_archive:
    break;
  }
  return sinks::oci_archive_sink(ref, std::move(options));
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
  if (ref.registry != oci::k_docker_hub) {
    return ref.registry + "/" + ref.repository;
  }
  // Docker's familiar name: its official images without "library/".
  return ref.repository.rfind("library/", 0) == 0 ? ref.repository.substr(8) : ref.repository;
}

} // namespace imageio
