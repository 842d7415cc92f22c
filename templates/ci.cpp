#include "templates/ci.hpp"

#include "templates/render.hpp"
#include "util/error.hpp"

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

nlohmann::json ci_data(const std::string& kind, const CiInput& in) {
  bool lock = !in.requirements.empty();
  // The command line goes into a comment: escaped so a spec path cannot start a line.
  return {{"command", comment_text("paddle-image render " + kind + " " + in.spec_file)},
          {"spec_file", in.spec_file},
          {"image", in.image},
          {"registry", registry_host(in.image)},
          {"sign", in.sign},
          {"lock_check", lock},
          {"requirements", in.requirements},
          {"lock_file", in.lock_file},
          {"lock_layer", in.lock_layer}};
}

nlohmann::json ci_schema() {
  return {{"command", nullptr},      {"spec_file", nullptr}, {"image", nullptr},
          {"registry", nullptr},     {"sign", nullptr},      {"lock_check", nullptr},
          {"requirements", nullptr}, {"lock_file", nullptr}, {"lock_layer", nullptr}};
}

std::string render_ci(const std::string& kind, const CiInput& in, const std::filesystem::path& template_dir) {
  return render(find_template(ci_template_name(kind), template_dir), ci_data(kind, in), ci_schema(),
                kind == "github-actions" ? Escape::github : Escape::gitlab);
}

} // namespace templates
