#pragma once
// `paddle-image init TEMPLATE DIR`: the files of a new project, rendered from the
// project templates (files/<template>.*.mustache) and the GitHub workflow template.
#include "templates/ci.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace templates {

struct ProjectFile {
  std::string path; // relative to the project directory
  std::string content;
};

const std::vector<std::string>& project_templates(); // ocr-train
// The project name an image name is made from: DIR's last component, lower case,
// other characters than [a-z0-9._-] as '-' ("app" when nothing is left).
std::string project_name(const std::filesystem::path& dir);
// The files of project template `name` (a usage error with "did you mean" for an
// unknown one); `image` is the repository the spec and CI push to; `tool` how the CI
// file gets paddle-image.
std::vector<ProjectFile> project_files(const std::string& name, const std::string& image,
                                       const std::filesystem::path& template_dir, const ToolSource& tool = {});

} // namespace templates
