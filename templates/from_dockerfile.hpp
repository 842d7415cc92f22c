#pragma once
// `init --from-dockerfile`: a Dockerfile read into instructions (line continuations,
// comments, parser directives) and mapped onto a spec. What has no spec equivalent
// (RUN apt-get, ADD of a URL, ARG, earlier stages of a multi-stage build, ...) is
// returned with its line number, never dropped silently. Pure: no file access.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace templates {

struct DockerInstruction {
  int line = 0;        // first physical line of the logical line
  std::string keyword; // upper case: FROM, COPY, ...
  std::string args;    // the rest; continuations joined as BuildKit joins them
  std::string text;    // the logical line as written (continuations joined)
  char escape = '\\';  // the escape character (the `# escape=` directive's)
};

// Throws Error(input) "FILE:LINE: ..." for a line that is not an instruction.
std::vector<DockerInstruction> parse_dockerfile(const std::string& text, const std::string& file_name);

struct Unmapped {
  int line = 0;
  std::string instruction; // the logical line (shortened to 120 characters)
  std::string reason;
};

struct FromDockerfile {
  std::string spec;                  // spec.yaml text
  std::vector<Unmapped> unmapped;    // in line order
  std::vector<std::string> commands; // to run next (paddle-image lock for each requirements file)
  // Files to write beside the spec: the requirements files of `pip install NAME...` lines.
  std::vector<std::pair<std::string, std::string>> files;
  // Steps left out because a spec needs nothing for them (apt-get update, rm, cd, a pip
  // self-upgrade, cache cleaning): "LINE: what", for the record.
  std::vector<std::string> left_out;
  // --build-arg names that no ARG declares (Docker warns of them the same way).
  std::vector<std::string> unused_build_args;
};

struct FromDockerfileOptions {
  // The Dockerfile's build context as seen from the spec's directory ("" when they are
  // the same): it is prefixed to COPY sources and requirements files.
  std::string context;
  // Each argument of `pip install` that names a package becomes one line of a
  // requirements file, so it must be one requirement: this returns why an argument is
  // not one (PEP 508; the CLI passes the python module's parser), nullopt when it is.
  // Without it, only what would change the file's meaning (a line break, a comment, an
  // option after the requirement) is refused.
  std::function<std::optional<std::string>(const std::string&)> requirement_error;
  // `docker build --build-arg NAME=VALUE`: the value an ARG of that name takes instead of
  // its default, where it is declared (before the first FROM for FROM lines, in the stage
  // for the rest), as in Docker.
  std::map<std::string, std::string> build_args;
};

FromDockerfile spec_from_dockerfile(const std::string& text, const std::string& file_name,
                                    const FromDockerfileOptions& options);
inline FromDockerfile spec_from_dockerfile(const std::string& text, const std::string& file_name,
                                           const std::string& context = "") {
  FromDockerfileOptions o;
  o.context = context;
  return spec_from_dockerfile(text, file_name, o);
}

} // namespace templates
