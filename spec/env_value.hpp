#pragma once
// A config.env value: literal text and references to the variables set before it (the
// base image's environment, then the spec's entries above it), expanded at build time
// as Docker expands an ENV against the base's config:
//   $NAME  ${NAME}          the value, "" when unset
//   ${NAME:-word} ${NAME-word}   word when NAME is unset or empty (:-) / unset (-)
//   ${NAME:+word} ${NAME+word}  word when NAME is set and not empty (:+) / set (+)
//   $$                      one '$'
// A '$' not followed by a name, '{' or '$' is itself. The word of a modifier is a
// value of its own (references inside it are expanded).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spec {

struct EnvPart {
  std::string text; // literal text (name empty)
  std::string name; // a reference
  std::string op;   // "", ":-", "-", ":+", "+"
  std::vector<EnvPart> word;
};

class EnvValue {
public:
  // Throws std::invalid_argument("... at column N") for an unterminated ${, a name that
  // is not [A-Za-z_][A-Za-z0-9_]*, or a modifier other than the four above.
  static EnvValue parse(std::string_view text);

  bool has_references() const;
  // The names it refers to, each once, in order (inside modifiers too).
  std::vector<std::string> references() const;

  // `lookup` gives a variable's value, nullopt when it is unset. Each reference that is
  // unset and has no modifier is added to *unset (once).
  std::string expand(const std::function<std::optional<std::string>(const std::string&)>& lookup,
                     std::vector<std::string>* unset = nullptr) const;

  // The value in a Dockerfile's double quotes ("..."), references as Docker reads them.
  std::string dockerfile_quoted() const;

  const std::vector<EnvPart>& parts() const { return m_parts; }

private:
  std::vector<EnvPart> m_parts;
};

// A character of a variable name, [A-Za-z_][A-Za-z0-9_]* (`first`: the name's first).
bool env_name_char(char c, bool first);

// The text of a literal for a config.env value: each '$' doubled.
std::string env_literal(std::string_view text);

} // namespace spec
