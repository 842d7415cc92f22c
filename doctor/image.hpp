#pragma once
// What an image needs from a GPU host, read from its config (labels, CUDA_VERSION,
// NVIDIA_REQUIRE_CUDA) and, with scan_layers, from the files in its layers.
#include "doctor/checks.hpp"

#include <string>

namespace doctor {

// `reference`: oci:DIR[:TAG] or docker-archive:FILE (registry references come with
// registry support and are refused with a usage error).
ImageNeeds read_image_needs(const std::string& reference, bool scan_layers);
// "cuda=12.6,sm=90,driver=525.60.13,driver_compat=...,require_cuda=12.6"
ImageNeeds needs_from_requires(const std::string& text);

} // namespace doctor
