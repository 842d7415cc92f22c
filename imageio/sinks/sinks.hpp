#pragma once
// One sink per kind of destination (imageio/destination.hpp's open_destination picks
// one by the reference's kind). Each writes any oci::Image under a list of tags, in the
// format of its kind, and names what it wrote; errors carry "writing REF" (a registry:
// "pushing to HOST/REPO").
#include "imageio/destination.hpp"

#include <memory>

namespace imageio::sinks {

std::unique_ptr<Destination> registry_sink(const oci::ImageRef& ref, DestinationOptions o);
std::unique_ptr<Destination> layout_sink(const oci::ImageRef& ref, DestinationOptions o);
std::unique_ptr<Destination> docker_archive_sink(const oci::ImageRef& ref, DestinationOptions o);
std::unique_ptr<Destination> oci_archive_sink(const oci::ImageRef& ref, DestinationOptions o);

} // namespace imageio::sinks
