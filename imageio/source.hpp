#pragma once
// The one function that opens an image source, whatever names it: an `oci:` layout, a
// `docker-archive:` or `oci-archive:` file, or a registry reference. Every command that reads an image
// (build's base, copy, push, pull, inspect, sbom, sign, verify, doctor --image, the
// templates' --facts) opens it here.
#include "oci/image.hpp"
#include "oci/reference.hpp"
#include "registry/client.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace imageio {

// Opens a registry host (with the command's credentials, TLS and retry settings).
using Connect = std::function<std::shared_ptr<registry::Registry>(const std::string& host)>;

// `archive_repo_tags` (may be null) receives a docker-archive's RepoTags (an
// oci-archive's containerd names, "REPO:TAG"). A registry
// reference without `connect` is a usage error naming it.
oci::ImagePtr open_source(const oci::ImageRef& ref, const Connect& connect,
                          std::vector<std::string>* archive_repo_tags = nullptr);

} // namespace imageio
