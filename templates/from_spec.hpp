#pragma once
// A spec as the input of `render dockerfile` and of the CI files: its layering and
// config as the Dockerfile's data, host paths as the build context (the spec's
// directory) sees them; the CI file's push target and lock check.
#include "spec/spec.hpp"
#include "templates/ci.hpp"
#include "templates/dockerfile.hpp"

#include <string>

namespace templates {

// The spec's platform, interpreter ("python3" when it names none), layers (each copy's
// source relative to the spec's directory, '/' after a directory; owners as "UID:GID")
// and config; `spec_file` as given on the command line (for the header).
DockerfileInput dockerfile_input(const spec::BuildSpec& s, const std::string& spec_file);

// What `render github-actions|gitlab-ci` is asked besides the kind and the spec.
struct CiRequest {
  std::string spec_file;    // as given on the command line
  std::string image;        // --image, "" for the spec's image.name
  bool no_sign = false;     // --no-sign
  ToolSource tool;          // --tool-archive, --tool-sha256, --tool-image
  std::string requirements; // --requirements, "" for no lock check
  std::string layer;        // --layer, "" for the one wheels layer from an index
};

// The CI file's input. The image (--image, else image.name) must be a registry
// repository without a tag or digest (the pipeline tags it with the commit). The lock
// check: the wheels layer from an index with a lock (the one --layer names) and an
// existing --requirements file; the lock's path relative to the working directory.
// Usage errors name the flag and the fix.
CiInput ci_input(const spec::BuildSpec& s, const CiRequest& r);

} // namespace templates
