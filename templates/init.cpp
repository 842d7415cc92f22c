#include "templates/init.hpp"

#include "templates/ci.hpp"
#include "templates/render.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>

namespace templates {

using util::Error;
using util::ErrorKind;

namespace {

struct Part {
  const char* path;      // in the project
  const char* template_; // suffix of the template file after "<name>."
  Escape escape;
};

// What an ocr-train project holds besides the CI file.
const std::vector<Part>& ocr_train_parts() {
  static const std::vector<Part> k = {
      {"spec.yaml", "spec.yaml.mustache", Escape::yaml},
      {".paddleimageignore", "paddleimageignore.mustache", Escape::none},
      {"requirements.txt", "requirements.txt.mustache", Escape::none},
      {"src/train.py", "train.py.mustache", Escape::none},
      {"models/README.md", "models-README.md.mustache", Escape::none},
  };
  return k;
}

} // namespace

const std::vector<std::string>& project_templates() {
  static const std::vector<std::string> k = {"ocr-train"};
  return k;
}

std::string project_name(const std::filesystem::path& dir) {
  std::string base = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (base.empty()) {
    base = std::filesystem::absolute(dir).lexically_normal().parent_path().filename().string();
  }
  std::string out;
  for (char c : base) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '_' || l == '-';
    out += ok ? l : '-';
  }
  while (!out.empty() && (out.front() == '-' || out.front() == '.' || out.front() == '_')) {
    out.erase(out.begin());
  }
  return out.empty() ? "app" : out;
}

std::vector<ProjectFile> project_files(const std::string& name, const std::string& image,
                                       const std::filesystem::path& template_dir, const ToolSource& tool) {
  const auto& known = project_templates();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    std::string near = util::closest(name, known);
    throw Error(ErrorKind::usage, "unknown project template '" + name + "'",
                (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "known: " + util::join(known, ", "));
  }
  nlohmann::json data = {{"image", image}, {"template", name}};
  nlohmann::json schema = {{"image", nullptr}, {"template", nullptr}};
  std::vector<ProjectFile> files;
  for (const Part& p : ocr_train_parts()) {
    Template t = find_template(name + "." + p.template_, template_dir);
    files.push_back({p.path, render(t, data, schema, p.escape)});
  }
  CiInput ci{"spec.yaml", image, true, "requirements.txt", "requirements.lock", "deps", tool};
  files.push_back({".github/workflows/build.yml", render_ci("github-actions", ci, template_dir)});
  return files;
}

} // namespace templates
