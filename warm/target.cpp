#include "warm/target.hpp"

#include "util/error.hpp"
#include "util/url.hpp"

namespace warm {

using util::Error;
using util::ErrorKind;

RegistryTarget parse_target(const std::string& text, const std::string& flag) {
  RegistryTarget t;
  bool has_scheme = text.find("://") != std::string::npos;
  auto u = util::parse_url(has_scheme ? text : "https://" + text);
  bool ok = u && (u->scheme == "http" || u->scheme == "https") && u->userinfo.empty() && !u->has_query &&
            !u->has_fragment && u->path.find_first_not_of('/') == std::string::npos && !u->host.empty() &&
            u->host.find_first_of(" \t") == std::string::npos;
  if (!ok) {
    throw Error(ErrorKind::usage,
                flag + " '" + util::redact_url(text) +
                    "' is not a registry host (the repository path is the image's own)",
                "e.g. " + flag + " mirror.cluster.local:5000 or " + flag + " http://127.0.0.1:5000");
  }
  t.plain_http = u->scheme == "http";
  t.host = u->authority();
  return t;
}

oci::ImageRef parse_registry_image(const std::string& text, const std::string& what) {
  oci::ImageRef ref = util::with_context(what, [&] { return oci::ImageRef::parse(text); });
  if (ref.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, what + " '" + text + "' is not a registry reference",
                "warm works on the repository path nodes pull from, e.g. registry.example.com/team/ocr:1.4");
  }
  return ref;
}

std::string reference_of(const oci::ImageRef& ref) {
  return ref.digest.empty() ? ref.tag : ref.digest;
}

} // namespace warm
