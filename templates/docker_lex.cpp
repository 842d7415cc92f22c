#include "templates/docker_lex.hpp"

#include "spec/env_value.hpp"

#include <cctype>

namespace templates {

namespace {

using spec::env_name_char;

// One pass over the text, as BuildKit's shell lexer (frontend/dockerfile/shell/lex.go):
// outside quotes the escape character takes the next character as it is; '...' is
// literal; inside "..." the escape character escapes only '"', '$' and itself, and is
// kept before anything else; $NAME and ${NAME...} are expanded wherever a quote does
// not stop them.
class Lexer {
public:
  Lexer(std::string_view s, const DockerVars& vars, const DockerRefs& refs, char escape)
      : m_s(s), m_vars(vars), m_refs(refs), m_esc(escape) {}

  // The whole text as one value: blanks are kept, as in an ENV value.
  LexedWord value() {
    LexedWord w;
    while (m_i < m_s.size()) {
      step(w);
    }
    return w;
  }

private:
  static void lit(LexedWord& w, char c) {
    w.value += c;
    w.spec += c == '$' ? std::string("$$") : std::string(1, c);
  }

  // What a part says of the value (references, an ARG without a default, a form a spec
  // cannot carry), the first of each kept.
  static void merge_flags(LexedWord& into, const LexedWord& part) {
    into.refers = into.refers || part.refers;
    if (into.unset_arg.empty()) {
      into.unset_arg = part.unset_arg;
    }
    if (into.unsupported.empty()) {
      into.unsupported = part.unsupported;
    }
  }

  static void merge(LexedWord& into, const LexedWord& part) {
    into.value += part.value;
    into.spec += part.spec;
    merge_flags(into, part);
  }

  // One unit of a word at m_i: a quoted run, an escape, a reference or a character.
  void step(LexedWord& w) {
    char c = m_s[m_i];
    if (c == '\'') {
      std::size_t close = m_s.find('\'', m_i + 1);
      if (close == std::string_view::npos) {
        w.unsupported = "a single quote without its closing one";
        m_i = m_s.size();
        return;
      }
      for (std::size_t k = m_i + 1; k < close; ++k) {
        lit(w, m_s[k]);
      }
      m_i = close + 1;
    } else if (c == '"') {
      double_quoted(w);
    } else if (c == m_esc) {
      if (m_i + 1 < m_s.size()) {
        lit(w, m_s[m_i + 1]);
      }
      m_i += 2;
    } else if (c == '$') {
      dollar(w);
    } else {
      lit(w, c);
      ++m_i;
    }
  }

  void double_quoted(LexedWord& w) {
    ++m_i;
    while (m_i < m_s.size()) {
      char c = m_s[m_i];
      if (c == '"') {
        ++m_i;
        return;
      }
      if (c == '$') {
        dollar(w);
        continue;
      }
      if (c == m_esc && m_i + 1 < m_s.size() && (m_s[m_i + 1] == '"' || m_s[m_i + 1] == '$' || m_s[m_i + 1] == m_esc)) {
        lit(w, m_s[m_i + 1]);
        m_i += 2;
        continue;
      }
      lit(w, c);
      ++m_i;
    }
    w.unsupported = "a double quote without its closing one";
  }

  // The word of ${NAME:-word}: up to the '}' that closes it, lexed as a word of its own.
  LexedWord modifier_word() {
    LexedWord w;
    while (m_i < m_s.size() && m_s[m_i] != '}') {
      step(w);
    }
    if (m_i >= m_s.size()) {
      w.unsupported = "a ${ without its closing }";
    } else {
      ++m_i;
    }
    return w;
  }

  void dollar(LexedWord& w) {
    std::size_t at = m_i + 1;
    if (at < m_s.size() && m_s[at] == '{') {
      braced(w);
      return;
    }
    std::size_t n = at;
    if (n < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[n])) != 0) {
      m_i = n + 1; // $1: a positional parameter, never set in a build: ""
      return;
    }
    while (n < m_s.size() && env_name_char(m_s[n], n == at)) {
      ++n;
    }
    if (n == at) {
      lit(w, '$');
      ++m_i;
      return;
    }
    m_i = n;
    reference(w, std::string(m_s.substr(at, n - at)), "", nullptr);
  }

  void braced(LexedWord& w) {
    std::size_t at = m_i + 2;
    std::size_t n = at;
    while (n < m_s.size() && env_name_char(m_s[n], n == at)) {
      ++n;
    }
    std::string name(m_s.substr(at, n - at));
    if (name.empty() || n >= m_s.size()) {
      w.unsupported = "${" + std::string(m_s.substr(at, 20)) + " is not a variable reference a spec can carry";
      m_i = m_s.size();
      return;
    }
    m_i = n;
    if (m_s[n] == '}') {
      ++m_i;
      reference(w, name, "", nullptr);
      return;
    }
    std::string op(1, m_s[n]);
    if (op == ":" && n + 1 < m_s.size()) {
      op += m_s[n + 1];
    }
    if (op != ":-" && op != "-" && op != ":+" && op != "+") {
      w.unsupported = "${" + name + op +
                      "...} (only $NAME, ${NAME}, ${NAME:-word}, ${NAME-word}, ${NAME:+word} "
                      "and ${NAME+word} carry over to a spec)";
      m_i = m_s.size();
      return;
    }
    m_i += op.size();
    LexedWord word = modifier_word();
    reference(w, name, op, &word);
  }

  // A reference: a Dockerfile variable's value, or the base's variable in the spec.
  void reference(LexedWord& w, const std::string& name, const std::string& op, const LexedWord* word) {
    if (auto r = m_refs.find(name); r != m_refs.end()) {
      if (!op.empty()) {
        w.unsupported =
            "${" + name + op + "...} tests " + name + ", whose value comes from the base's: write the value out";
        return;
      }
      w.spec += r->second;
      w.refers = true;
      return;
    }
    auto v = m_vars.find(name);
    if (v == m_vars.end()) {
      // Nobody in the Dockerfile set it: the base's environment gives it at build time.
      w.refers = true;
      w.spec += "${" + name + op + (word != nullptr ? word->spec : std::string()) + "}";
      if (word != nullptr) {
        merge_flags(w, *word);
      }
      return;
    }
    if (!v->second) {
      w.unset_arg = name;
      return;
    }
    const std::string& val = *v->second;
    const bool plus = op == ":+" || op == "+"; // the word when set (and not empty), else ""
    const bool use_word = (op == ":-" && val.empty()) || (op == ":+" && !val.empty()) || op == "+";
    if (use_word) {
      merge(w, *word);
    } else if (!plus) {
      w.value += val;
      w.spec += spec::env_literal(val);
    }
  }

  std::string_view m_s;
  const DockerVars& m_vars;
  const DockerRefs& m_refs;
  char m_esc;
  std::size_t m_i = 0;
};

} // namespace

LexedWord lex_docker_value(std::string_view text, const DockerVars& vars, const DockerRefs& refs, char escape) {
  return Lexer(text, vars, refs, escape).value();
}

} // namespace templates
