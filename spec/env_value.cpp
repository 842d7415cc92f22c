#include "spec/env_value.hpp"

#include <algorithm>
#include <stdexcept>

namespace spec {

namespace {

std::invalid_argument at(std::size_t col, const std::string& what) {
  return std::invalid_argument(what + " at column " + std::to_string(col + 1));
}

// Parts from s[i] on, up to the end or (in a modifier's word) the '}' that closes it.
std::vector<EnvPart> parse_parts(std::string_view s, std::size_t& i, bool in_word) {
  std::vector<EnvPart> parts;
  auto literal = [&](std::string_view t) {
    if (parts.empty() || !parts.back().name.empty()) {
      parts.emplace_back();
    }
    parts.back().text += t;
  };
  while (i < s.size()) {
    char c = s[i];
    if (in_word && c == '}') {
      return parts;
    }
    if (c != '$' || i + 1 >= s.size()) {
      literal(s.substr(i, 1));
      ++i;
      continue;
    }
    char n = s[i + 1];
    if (n == '$') {
      literal("$");
      i += 2;
      continue;
    }
    EnvPart ref;
    if (n != '{') {
      if (!env_name_char(n, true)) {
        literal("$");
        ++i;
        continue;
      }
      std::size_t e = i + 1;
      while (e < s.size() && env_name_char(s[e], e == i + 1)) {
        ++e;
      }
      ref.name = std::string(s.substr(i + 1, e - i - 1));
      i = e;
      parts.push_back(std::move(ref));
      continue;
    }
    const std::size_t open = i;
    std::size_t e = i + 2;
    while (e < s.size() && env_name_char(s[e], e == i + 2)) {
      ++e;
    }
    if (e == i + 2) {
      throw at(open, "'${' is not followed by a variable name ([A-Za-z_][A-Za-z0-9_]*; write $$ for a '$')");
    }
    ref.name = std::string(s.substr(i + 2, e - i - 2));
    if (e < s.size() && s[e] != '}') {
      for (const char* op : {":-", ":+", "-", "+"}) {
        if (s.substr(e, std::string_view(op).size()) == op) {
          ref.op = op;
          break;
        }
      }
      if (ref.op.empty()) {
        throw at(e, "'${" + ref.name + s[e] +
                        "...}' is not a supported form (${NAME}, ${NAME:-word}, ${NAME-word}, "
                        "${NAME:+word}, ${NAME+word})");
      }
      e += ref.op.size();
      ref.word = parse_parts(s, e, true);
    }
    if (e >= s.size()) {
      throw at(open, "'${' has no closing '}'");
    }
    i = e + 1;
    parts.push_back(std::move(ref));
  }
  if (in_word) {
    throw at(s.size() - 1, "a '${...' word has no closing '}'");
  }
  return parts;
}

void collect(const std::vector<EnvPart>& parts, std::vector<std::string>& names) {
  for (const auto& p : parts) {
    if (!p.name.empty() && std::find(names.begin(), names.end(), p.name) == names.end()) {
      names.push_back(p.name);
    }
    collect(p.word, names);
  }
}

std::string expand_parts(const std::vector<EnvPart>& parts,
                         const std::function<std::optional<std::string>(const std::string&)>& lookup,
                         std::vector<std::string>* unset) {
  std::string out;
  for (const auto& p : parts) {
    if (p.name.empty()) {
      out += p.text;
      continue;
    }
    std::optional<std::string> v = lookup(p.name);
    const bool set = v.has_value();
    const bool full = set && !v->empty();
    if (p.op == ":-" || p.op == "-") {
      out += (p.op == ":-" ? full : set) ? *v : expand_parts(p.word, lookup, unset);
    } else if (p.op == ":+" || p.op == "+") {
      out += (p.op == ":+" ? full : set) ? expand_parts(p.word, lookup, unset) : "";
    } else if (set) {
      out += *v;
    } else if (unset != nullptr && std::find(unset->begin(), unset->end(), p.name) == unset->end()) {
      unset->push_back(p.name);
    }
  }
  return out;
}

// Inside Docker's double quotes '\' escapes '"', '$' and '\'; in a modifier's word the
// shell lexer also stops at '}', which an escape keeps.
std::string quoted_parts(const std::vector<EnvPart>& parts, bool in_word) {
  std::string out;
  for (const auto& p : parts) {
    if (p.name.empty()) {
      for (char c : p.text) {
        if (c == '"' || c == '$' || c == '\\' || (in_word && c == '}')) {
          out += '\\';
        }
        out += c;
      }
      continue;
    }
    out += "${" + p.name;
    if (!p.op.empty()) {
      out += p.op + quoted_parts(p.word, true);
    }
    out += "}";
  }
  return out;
}

} // namespace

EnvValue EnvValue::parse(std::string_view text) {
  EnvValue v;
  std::size_t i = 0;
  v.m_parts = parse_parts(text, i, false);
  return v;
}

bool EnvValue::has_references() const {
  return std::any_of(m_parts.begin(), m_parts.end(), [](const EnvPart& p) { return !p.name.empty(); });
}

std::vector<std::string> EnvValue::references() const {
  std::vector<std::string> names;
  collect(m_parts, names);
  return names;
}

std::string EnvValue::expand(const std::function<std::optional<std::string>(const std::string&)>& lookup,
                             std::vector<std::string>* unset) const {
  return expand_parts(m_parts, lookup, unset);
}

std::string EnvValue::dockerfile_quoted() const {
  return "\"" + quoted_parts(m_parts, false) + "\"";
}

bool env_name_char(char c, bool first) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

std::string env_literal(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '$') {
      out += '$';
    }
  }
  return out;
}

} // namespace spec
