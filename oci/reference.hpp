#pragma once
// The one image-reference grammar used by the spec, every flag and every command
// (docs/references.md):
//   oci:DIR[:TAG]           an OCI image layout directory, optionally one tag in it
//   docker-archive:FILE     a `docker load` tar
//   oci-archive:FILE[:TAG]  an OCI image layout in one tar (`ctr images import`,
//                           skopeo's and podman's oci-archive), optionally one tag in it
//   [docker://]NAME         a registry: host[:port]/path[:tag][@digest]; Docker Hub
//                           shorthand ("ubuntu") becomes docker.io/library/ubuntu:latest
#include <string>
#include <string_view>
#include <vector>

namespace oci {

struct ImageRef {
  enum class Kind { oci_layout, docker_archive, oci_archive, registry };
  Kind kind = Kind::registry;
  std::string path;           // oci_layout / docker_archive / oci_archive
  std::string tag;            // optional for oci_layout and oci_archive; registry: tag (may be empty with a digest)
  std::string registry;       // registry: host[:port], normalised
  std::string repository;     // registry: path
  std::string digest;         // registry: "sha256:..." when pinned
  bool tag_defaulted = false; // registry: no tag was written, "latest" was assumed

  static ImageRef parse(std::string_view text); // throws util::Error(usage/input)
  std::string str() const;
  // "registry/repository" for registries.
  std::string name() const;
  // Equal when they name the same thing (how the tag came about does not matter).
  bool operator==(const ImageRef& o) const {
    return kind == o.kind && path == o.path && tag == o.tag && registry == o.registry && repository == o.repository &&
           digest == o.digest;
  }
};

bool is_valid_tag(std::string_view tag);
// A usage error naming the first of `tags` (--tag flags) that is not a valid tag.
void check_tag_flags(const std::vector<std::string>& tags);

// Docker Hub, by the name paddle-image uses for it everywhere (references, credential
// lookups, containerd's hosts directories), and where its API answers.
inline constexpr std::string_view k_docker_hub = "docker.io";
inline constexpr std::string_view k_docker_hub_api = "registry-1.docker.io";
// docker.io and its aliases index.docker.io and registry-1.docker.io.
bool is_docker_hub(std::string_view host);
// The registry host as paddle-image names it: Docker Hub's aliases become docker.io,
// any other host is returned as it is.
std::string canonical_registry(std::string_view host);
// The registry host `login` and `logout` take: "https://", "http://" or "docker://" and
// any path after the host dropped, Docker Hub's aliases made docker.io; empty or with a
// blank or '@' it is a usage error. (warm's --to/--through are URLs, warm::parse_target.)
std::string login_host(const std::string& text);

} // namespace oci
