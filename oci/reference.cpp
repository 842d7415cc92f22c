#include "oci/reference.hpp"

#include "oci/digest.hpp"
#include "util/error.hpp"

#include <regex>

namespace oci {

namespace {

const std::regex& tag_re() {
  static const std::regex re("[A-Za-z0-9_][A-Za-z0-9._-]{0,127}");
  return re;
}

const std::regex& component_re() {
  static const std::regex re("[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*");
  return re;
}

util::Error bad_ref(std::string_view text, const std::string& why) {
  return util::Error(
      util::ErrorKind::input, "invalid image reference '" + std::string(text) + "': " + why,
      "use oci:DIR[:TAG], docker-archive:FILE, oci-archive:FILE[:TAG] or host[:port]/path[:tag][@digest] "
      "(see docs/references.md)");
}

ImageRef parse_registry(std::string_view full, std::string_view text) {
  ImageRef r;
  r.kind = ImageRef::Kind::registry;
  std::string rest(text);
  if (auto at = rest.find('@'); at != std::string::npos) {
    r.digest = Digest::parse(rest.substr(at + 1)).str();
    rest = rest.substr(0, at);
  }
  // A tag is after the last ':' that follows the last '/'.
  auto slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    r.tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!is_valid_tag(r.tag)) {
      throw bad_ref(full, "tag '" + r.tag + "' is not valid (letters, digits, _ . -, at most 128)");
    }
  }
  if (rest.empty()) {
    throw bad_ref(full, "no repository name");
  }
  auto first_slash = rest.find('/');
  std::string first = rest.substr(0, first_slash);
  if (first_slash != std::string::npos &&
      (first.find('.') != std::string::npos || first.find(':') != std::string::npos || first == "localhost")) {
    r.registry = first;
    r.repository = rest.substr(first_slash + 1);
  } else {
    r.registry = "docker.io";
    r.repository = rest;
  }
  r.registry = canonical_registry(r.registry);
  if (r.registry == "docker.io" && r.repository.find('/') == std::string::npos) {
    r.repository = "library/" + r.repository;
  }
  std::size_t start = 0;
  while (start <= r.repository.size()) {
    auto end = r.repository.find('/', start);
    std::string comp = r.repository.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!std::regex_match(comp, component_re())) {
      throw bad_ref(full, "path component '" + comp + "' is not valid (lowercase letters, digits, separators . _ -)");
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  if (r.tag.empty() && r.digest.empty()) {
    r.tag = "latest";
    r.tag_defaulted = true;
  }
  return r;
}

// oci:DIR[:TAG] and oci-archive:FILE[:TAG]: a tag is what follows the last ':' when it
// is a valid tag with no '/' (so "oci:/x/a:b/c" is the directory "/x/a:b/c").
ImageRef parse_path_and_tag(std::string_view text, std::size_t prefix, ImageRef::Kind kind, const char* what) {
  ImageRef r;
  r.kind = kind;
  std::string rest(text.substr(prefix));
  auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    std::string maybe_tag = rest.substr(colon + 1);
    if (maybe_tag.find('/') == std::string::npos && is_valid_tag(maybe_tag)) {
      r.tag = maybe_tag;
      rest = rest.substr(0, colon);
    } else if (maybe_tag.empty()) {
      rest = rest.substr(0, colon);
    }
  }
  if (rest.empty()) {
    throw bad_ref(text, std::string("no ") + what + " after '" + std::string(text.substr(0, prefix)) + "'");
  }
  r.path = rest;
  return r;
}

} // namespace

bool is_valid_tag(std::string_view tag) {
  return std::regex_match(tag.begin(), tag.end(), tag_re());
}

void check_tag_flags(const std::vector<std::string>& tags) {
  for (const auto& t : tags) {
    if (!is_valid_tag(t)) {
      throw util::Error(util::ErrorKind::usage, "--tag '" + t + "' is not a valid tag",
                        "letters, digits, '_', '.', '-' (max 128, not starting with '.' or '-')");
    }
  }
}

ImageRef ImageRef::parse(std::string_view text) {
  if (text.empty()) {
    throw bad_ref(text, "empty");
  }
  if (text.rfind("oci:", 0) == 0) {
    return parse_path_and_tag(text, 4, ImageRef::Kind::oci_layout, "directory");
  }
  if (text.rfind("oci-archive:", 0) == 0) {
    return parse_path_and_tag(text, 12, ImageRef::Kind::oci_archive, "file");
  }
  if (text.rfind("docker-archive:", 0) == 0) {
    ImageRef r;
    r.kind = Kind::docker_archive;
    r.path = std::string(text.substr(15));
    if (r.path.empty()) {
      throw bad_ref(text, "no file after 'docker-archive:'");
    }
    return r;
  }
  if (text.rfind("docker://", 0) == 0) {
    return parse_registry(text, text.substr(9));
  }
  for (const char* other : {"dir:", "containers-storage:", "docker-daemon:"}) {
    if (text.rfind(other, 0) == 0) {
      throw bad_ref(text, std::string("transport '") + other + "' is not supported");
    }
  }
  return parse_registry(text, text);
}

std::string ImageRef::name() const {
  return registry + "/" + repository;
}

std::string ImageRef::str() const {
  switch (kind) {
  case Kind::oci_layout:
    return "oci:" + path + (tag.empty() ? "" : ":" + tag);
  case Kind::docker_archive:
    return "docker-archive:" + path;
  case Kind::oci_archive:
    return "oci-archive:" + path + (tag.empty() ? "" : ":" + tag);
  case Kind::registry: {
    std::string s = name();
    if (!tag.empty()) {
      s += ":" + tag;
    }
    if (!digest.empty()) {
      s += "@" + digest;
    }
    return s;
  }
  }
  return {};
}

bool is_docker_hub(std::string_view host) {
  return host == k_docker_hub || host == "index.docker.io" || host == k_docker_hub_api;
}

std::string canonical_registry(std::string_view host) {
  return std::string(is_docker_hub(host) ? k_docker_hub : host);
}

std::string login_host(const std::string& text) {
  std::string h = text;
  for (const char* scheme : {"https://", "http://", "docker://"}) {
    if (h.rfind(scheme, 0) == 0) {
      h = h.substr(std::string(scheme).size());
    }
  }
  h = h.substr(0, h.find('/'));
  if (h.empty() || h.find_first_of(" \t@") != std::string::npos) {
    throw util::Error(util::ErrorKind::usage, "'" + text + "' is not a registry host",
                      "e.g. registry.example.com or 127.0.0.1:5000");
  }
  return canonical_registry(h);
}

} // namespace oci
