#pragma once
// What warm's commands are pointed at: a registry host named by a flag (--to,
// --through, --registry) and the registry reference of the image (the repository path
// nodes pull from).
#include "oci/reference.hpp"

#include <string>

namespace warm {

// A registry named by a flag: host[:port], or a URL. An explicit http:// is consent
// to plain HTTP for that host (as --insecure-registry HOST would be).
struct RegistryTarget {
  std::string host; // host[:port], as written (no Docker Hub aliasing)
  bool plain_http = false;
};

// A registry host as --to, --through and --registry take it: host[:port], or
// http(s)://host[:port][/] (http:// consents to plain HTTP for it), split by
// util::parse_url, the one URL parser. A path, credentials, a query or a fragment, or
// another scheme, is a usage error naming `flag` (the URL shown redacted).
RegistryTarget parse_target(const std::string& text, const std::string& flag);

// IMAGE (or --name) as a registry reference; a layout or an archive is a usage error
// naming `what`.
oci::ImageRef parse_registry_image(const std::string& text, const std::string& what);

// The tag or digest a registry reference names (the digest when it has both).
std::string reference_of(const oci::ImageRef& ref);

} // namespace warm
