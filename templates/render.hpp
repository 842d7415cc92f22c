#pragma once
// Template files (templates/files/, embedded at build time; --template-dir overrides
// any of them by name) rendered with mustache. Before rendering, every tag of the
// template is checked against the variables the renderer provides (mustache itself
// renders an unknown variable as nothing): an unknown one is an input error naming
// the template file and line. `{{name}}` escapes the value for the target (a
// double-quoted YAML string, a double-quoted Dockerfile word); `{{{name}}}` inserts
// it as it is (values the renderer has already escaped, e.g. JSON arrays).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace templates {

struct EmbeddedTemplate {
  const char* name;
  const char* content;
};
const std::vector<EmbeddedTemplate>& embedded_templates();

struct Template {
  std::string name;   // file name, e.g. "Dockerfile.mustache"
  std::string text;   // the template
  std::string origin; // "embedded:Dockerfile.mustache" or the override's path
};

// The template NAME: DIR/NAME when `template_dir` is given and holds it, else the
// embedded one. An unknown name is an internal error (names are the renderer's).
Template find_template(const std::string& name, const std::filesystem::path& template_dir);
// A usage error when `dir` is not a directory or holds a *.mustache file that is not a
// template name (a typo would otherwise be ignored silently), with "did you mean".
void check_template_dir(const std::filesystem::path& dir);

enum class Escape {
  yaml,       // {{x}} -> "x" as a YAML double-quoted scalar (\", \\, \n, \t, \xNN escapes)
  github,     // yaml, and a value holding "${{" is refused: the runner would evaluate it
  gitlab,     // yaml with every '$' doubled: GitLab expands variables in `variables:` values
  dockerfile, // {{x}} -> "x" as a Dockerfile double-quoted word (\", \\, \$ escaped; no newlines)
  none,       // {{x}} -> x (plain text files)
};

// A YAML double-quoted scalar that both YAML 1.1 and 1.2 parsers read back as `value`:
// C0 and C1 controls, NEL, U+2028/U+2029 and a BOM escaped (a parser folds a raw line
// break, and 1.1 parsers take NEL and the separators for one).
std::string yaml_quote(const std::string& value);
// Throws Error(input) for a newline (a Dockerfile line cannot hold one).
std::string dockerfile_quote(const std::string& value);

// `schema` names the variables the renderer provides: an object whose keys are the
// variable names; a value that is an object is the shape of a nested object or of the
// items of a list (for sections), anything else a plain value.
// Throws Error(input) "ORIGIN:LINE: unknown variable 'x'" (with the known names as a
// hint, and "did you mean" for a typo), or for a malformed template.
void check_variables(const Template& t, const nlohmann::json& schema);

// check_variables, then render `data` (objects, arrays of objects, strings, numbers,
// booleans) with the target's escaping.
std::string render(const Template& t, const nlohmann::json& data, const nlohmann::json& schema, Escape escape);

// A value for a comment line of any format (YAML, Dockerfile, TOML, shell): control bytes,
// invalid UTF-8 and every Unicode line break a parser may honour (U+0085 NEL, U+2028,
// U+2029) written as escapes, so a value can never end the comment and start a line.
std::string comment_text(std::string_view value);

} // namespace templates
