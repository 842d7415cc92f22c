#pragma once
// What an image needs from a GPU host, read from its config (labels, CUDA_VERSION,
// NVIDIA_REQUIRE_CUDA) and, with scan_layers, from the files in its layers.
#include "doctor/checks.hpp"
#include "oci/image.hpp"

#include <filesystem>
#include <vector>

#include <string>

namespace doctor {

// The needs of an image from any source (an OCI layout, a docker-archive, a registry:
// cli/ opens it): its config, the platform `selection` picks from an index, and with
// scan_layers what its layers ship. `source` names the image in reports.
ImageNeeds image_needs(const oci::Image& img, const oci::CopyOptions& selection, bool scan_layers,
                       const std::string& source);
// The needs an image config states; `source` names the image in messages and reports.
ImageNeeds needs_from_config(const std::string& source, const oci::ImageConfig& config);
// "cuda=12.6,sm=90,driver=525.60.13,driver_compat=...,require_cuda=12.6"
ImageNeeds needs_from_requires(const std::string& text);
// The inverse: the stated needs as --requires text (what the rendered DaemonSet passes
// each node's doctor), keys in the order cuda, driver, driver_compat, require_cuda,
// paddle, sm (one per architecture, "sm_" dropped), gpu_memory (in Mi); empty ones
// left out.
std::string needs_as_requires(const ImageNeeds& n);

} // namespace doctor
