#include "templates/ci.hpp"

#include "templates/render.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <regex>
#include <tuple>

namespace templates {

const std::vector<std::string>& ci_kinds() {
  static const std::vector<std::string> k = {"github-actions", "gitlab-ci"};
  return k;
}

std::string registry_host(const std::string& image) {
  std::size_t slash = image.find('/');
  if (slash == std::string::npos) {
    return "docker.io";
  }
  std::string first = image.substr(0, slash);
  if (first.find_first_of(".:") != std::string::npos || first == "localhost") {
    return first;
  }
  return "docker.io";
}

std::string ci_template_name(const std::string& kind) {
  return kind == "github-actions" ? "github-actions.yml.mustache" : "gitlab-ci.yml.mustache";
}

namespace {
// At most n characters of a value quoted in a message.
std::string shorten(const std::string& v, std::size_t n) {
  return v.size() <= n ? v : v.substr(0, n) + "...";
}
} // namespace

void check_tool_source(const ToolSource& t) {
  using util::Error;
  using util::ErrorKind;
  auto bad = [](const std::string& flag, const std::string& why, const std::string& hint) {
    throw Error(ErrorKind::usage, flag + " " + why, hint);
  };
  auto printable = [](const std::string& v) {
    return std::all_of(v.begin(), v.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; });
  };
  if (!t.image.empty() && (!t.archive_url.empty() || !t.archive_sha256.empty())) {
    bad("--tool-image", "and --tool-archive are two ways to get paddle-image: give one", "drop one of them");
  }
  if (!t.archive_url.empty() || !t.archive_sha256.empty()) {
    if (t.archive_url.empty() || t.archive_sha256.empty()) {
      bad(t.archive_url.empty() ? "--tool-sha256" : "--tool-archive", "needs the other one",
          "give --tool-archive URL together with --tool-sha256 HEX (the line of the release's SHA256SUMS)");
    }
    auto u = util::parse_url(t.archive_url);
    if (!printable(t.archive_url) || !u || (u->scheme != "https" && u->scheme != "http")) {
      bad("--tool-archive", "'" + shorten(util::without_userinfo(t.archive_url), 120) + "' is not an http(s) URL",
          "give the release archive's URL, e.g. https://example.com/paddle-image-0.1.0-linux-amd64.tar.gz");
    }
    if (t.archive_url.find("${{") != std::string::npos) {
      bad("--tool-archive", "holds '${{', which GitHub Actions would evaluate as an expression",
          "give the archive's plain URL");
    }
    if (!u->userinfo.empty()) {
      // The URL is written into the pipeline file, which is committed.
      bad("--tool-archive", "carries credentials (user:password@), which would be written into the pipeline file",
          "serve the archive without them, or fetch it with a CI secret in your own step");
    }
    if (t.archive_sha256.size() != 64 || !util::is_lower_hex(t.archive_sha256)) {
      bad("--tool-sha256", "'" + shorten(t.archive_sha256, 80) + "' is not 64 lower-case hex digits",
          "copy the archive's line of SHA256SUMS");
    }
  }
  if (!t.image.empty()) {
    static const std::regex pinned("[a-z0-9][a-z0-9._:/-]*@sha256:[0-9a-f]{64}");
    if (!printable(t.image) || !std::regex_match(t.image, pinned)) {
      bad("--tool-image", "'" + shorten(t.image, 120) + "' is not an image pinned by digest (REPO@sha256:HEX)",
          "pin it: the job runs whatever the reference names, so a tag could change under it");
    }
  }
}

nlohmann::json ci_data(const std::string& kind, const CiInput& in) {
  bool lock = !in.requirements.empty();
  bool archive = !in.tool.archive_url.empty();
  bool image = !in.tool.image.empty();
  // The command line goes into a comment: escaped so a spec path cannot start a line.
  return {{"command", comment_text("paddle-image render " + kind + " " + in.spec_file)},
          {"spec_file", in.spec_file},
          {"image", in.image},
          {"registry", registry_host(in.image)},
          {"sign", in.sign},
          {"lock_check", lock},
          {"requirements", in.requirements},
          {"lock_file", in.lock_file},
          {"lock_layer", in.lock_layer},
          {"tool_from_source", !archive && !image},
          {"tool_archive", archive},
          {"tool_archive_url", in.tool.archive_url},
          {"tool_sha256", in.tool.archive_sha256},
          {"tool_image", image},
          {"tool_image_ref", in.tool.image}};
}

nlohmann::json ci_schema() {
  return {{"command", nullptr},          {"spec_file", nullptr},    {"image", nullptr},
          {"registry", nullptr},         {"sign", nullptr},         {"lock_check", nullptr},
          {"requirements", nullptr},     {"lock_file", nullptr},    {"lock_layer", nullptr},
          {"tool_from_source", nullptr}, {"tool_archive", nullptr}, {"tool_archive_url", nullptr},
          {"tool_sha256", nullptr},      {"tool_image", nullptr},   {"tool_image_ref", nullptr}};
}

std::string render_ci(const std::string& kind, const CiInput& in, const std::filesystem::path& template_dir) {
  check_tool_source(in.tool);
  Template t = find_template(ci_template_name(kind), template_dir);
  // A template written before these options would silently keep building from source.
  for (const auto& [given, section, flag] : {std::tuple{!in.tool.archive_url.empty(), "tool_archive", "--tool-archive"},
                                             std::tuple{!in.tool.image.empty(), "tool_image", "--tool-image"}}) {
    if (given && t.text.find(section) == std::string::npos) {
      throw util::Error(util::ErrorKind::usage,
                        std::string(flag) + " is given but the template " + t.origin + " has no " + section +
                            " section",
                        "add one (the built-in template shows how: docs/templates.md), or drop " + std::string(flag));
    }
  }
  return render(t, ci_data(kind, in), ci_schema(), kind == "github-actions" ? Escape::github : Escape::gitlab);
}

} // namespace templates
