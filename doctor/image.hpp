#pragma once
// What an image needs from a GPU host, read from its config (labels, CUDA_VERSION,
// NVIDIA_REQUIRE_CUDA) and, with scan_layers, from the files in its layers.
#include "doctor/checks.hpp"
#include "oci/types.hpp"

#include <filesystem>
#include <vector>

#include <string>

namespace doctor {

// `reference`: oci:DIR[:TAG] or docker-archive:FILE. Registry images are fetched by
// cli/ (the doctor has no registry client) and handed over with the two below.
ImageNeeds read_image_needs(const std::string& reference, bool scan_layers);
// The needs an image config states; `source` names the image in messages and reports.
ImageNeeds needs_from_config(const std::string& source, const oci::ImageConfig& config);
// Adds what the layer files (compressed tar blobs, in order) show: driver files,
// cuda-compat libraries and ld.so.conf.d entries that force them.
void scan_layer_files(ImageNeeds& needs, const std::vector<std::filesystem::path>& layer_files);
// "cuda=12.6,sm=90,driver=525.60.13,driver_compat=...,require_cuda=12.6"
ImageNeeds needs_from_requires(const std::string& text);

} // namespace doctor
