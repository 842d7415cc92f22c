#pragma once
// Docker's lexing of an ENV value: quotes, the escape character and variable
// references in one pass, as BuildKit's shell lexer reads them, so a value substituted
// in is never lexed again. The result is the value a Dockerfile gives, or, where it
// refers to a variable the Dockerfile never set (the base image's $PATH), the value in
// a spec's env form (spec/env_value.hpp), which the build expands against the base.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace templates {

// The Dockerfile's own variables: name -> value (nullopt: an ARG without a default,
// which only a --build-arg would give).
using DockerVars = std::map<std::string, std::optional<std::string>>;
// Variables whose values refer to the base's (ENV PATH=/opt/x/bin:$PATH): name -> the
// value in a spec's env form.
using DockerRefs = std::map<std::string, std::string>;

struct LexedWord {
  std::string value;       // the word with quotes and escapes removed, references expanded
  std::string spec;        // the same in a spec's env form: '$' as "$$", the base's as ${NAME}
  bool refers = false;     // refers to the base's variables: only `spec` is the value
  std::string unset_arg;   // an ARG without a default it refers to, "" when none
  std::string unsupported; // a form a spec cannot carry, or a lexing error; "" when none
};

// `text` as one value (an ENV value: blanks kept), lexed with the Dockerfile's `vars`
// and the `refs` of its variables that refer to the base's.
LexedWord lex_docker_value(std::string_view text, const DockerVars& vars, const DockerRefs& refs, char escape = '\\');

} // namespace templates
