#pragma once
// The base image of a build: its manifest, config and where its blobs live, plus
// what the wheel installer needs to know about its Python.
#include "layers/wheel.hpp"
#include "oci/layout.hpp"
#include "spec/spec.hpp"

#include <optional>
#include <string>

namespace builder {

struct Base {
  std::string name;                  // as written in the spec ("scratch", "oci:/x:tag")
  std::optional<oci::Digest> digest; // manifest digest (none for scratch)
  oci::Manifest manifest;            // empty layers for scratch
  oci::ImageConfig config;
  std::optional<oci::OciLayout> layout; // where the base blobs are
};

// Opens the base named by the spec. Registry and "auto" bases are refused with an
// explanation (they come with the registry and compatibility-matrix work).
Base open_base(const spec::BuildSpec& s);

// What the spec says about Python, completed from the base's layers when needed
// (interpreter, site-packages, glibc). Results of base scans are cached in
// cache_dir/base-info.
layers::PythonTarget python_target(const spec::BuildSpec& s, const Base& base, const std::filesystem::path& cache_dir);

} // namespace builder
