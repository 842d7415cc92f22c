#pragma once
// `render github-actions|gitlab-ci`: a pipeline that gets paddle-image, checks the
// lock (when asked), builds, signs and pushes with --digest-file, and passes the
// digest on (a GitHub job output, a GitLab dotenv artifact). The build reads the
// registry build cache IMAGE/cache on every pipeline and writes it only on protected
// branches (PADDLE_IMAGE_CACHE_FROM/_TO, docs/templates.md).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace templates {

// How the pipeline gets paddle-image. Default (all empty): built from source, or an
// installed binary a runner variable names. `archive_url` + `archive_sha256`: a release
// archive (scripts/release.sh), downloaded, checked against the SHA-256 and unpacked
// under /opt/paddle-image. `image`: paddle-image's own image, pinned by digest
// (REF@sha256:...), as the job's image.
struct ToolSource {
  std::string archive_url;
  std::string archive_sha256;
  std::string image;
};

struct CiInput {
  std::string spec_file; // relative to the repository root (where the pipeline runs)
  std::string image;     // push target without a tag, e.g. registry.example.com/ocr/train
  bool sign = true;      // --sign --key from a CI secret
  // The lock check (paddle-image lock REQUIREMENTS ... && diff LOCK): all empty for none.
  std::string requirements;
  std::string lock_file;
  std::string lock_layer;
  ToolSource tool;
};
// Checks a ToolSource; throws util::Error(usage) naming the flag (--tool-archive,
// --tool-sha256, --tool-image) and what is wrong.
void check_tool_source(const ToolSource& t);

const std::vector<std::string>& ci_kinds(); // github-actions, gitlab-ci
// The registry host of an image name: its first component when that has a '.' or ':'
// or is localhost, else docker.io.
std::string registry_host(const std::string& image);
nlohmann::json ci_data(const std::string& kind, const CiInput& in);
nlohmann::json ci_schema();
// The template file of a kind ("github-actions.yml.mustache").
std::string ci_template_name(const std::string& kind);
std::string render_ci(const std::string& kind, const CiInput& in, const std::filesystem::path& template_dir);

} // namespace templates
