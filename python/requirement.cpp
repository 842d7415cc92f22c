#include "python/requirement.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>
#include <vector>

namespace python {

struct Marker::Node {
  enum class Kind { all, any, compare };
  struct Operand {
    bool variable = false;
    std::string text; // canonical variable name, or the string's value
  };
  Kind kind = Kind::compare;
  std::vector<Node> children; // all / any
  Operand lhs;                // compare
  std::string op;
  Operand rhs;
};

namespace {

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// Characters of a project or extra name (PEP 508 "identifier") and of marker variables.
bool is_name_char(char c) {
  return is_alnum(c) || c == '-' || c == '_' || c == '.';
}

// Canonical name of a marker variable; the dotted spellings are PEP 345 leftovers that
// packaging still accepts.
std::string canonical_variable(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> names = {
      {"python_version", "python_version"},
      {"python_full_version", "python_full_version"},
      {"os_name", "os_name"},
      {"os.name", "os_name"},
      {"sys_platform", "sys_platform"},
      {"sys.platform", "sys_platform"},
      {"platform_release", "platform_release"},
      {"platform_system", "platform_system"},
      {"platform_version", "platform_version"},
      {"platform.version", "platform_version"},
      {"platform_machine", "platform_machine"},
      {"platform.machine", "platform_machine"},
      {"platform_python_implementation", "platform_python_implementation"},
      {"platform.python_implementation", "platform_python_implementation"},
      {"python_implementation", "platform_python_implementation"},
      {"implementation_name", "implementation_name"},
      {"implementation_version", "implementation_version"},
      {"extra", "extra"},
  };
  auto it = names.find(name);
  return it == names.end() ? std::string() : it->second;
}

constexpr std::array<std::string_view, 8> comparison_ops = {"===", "==", "!=", "<=", ">=", "~=", "<", ">"};

bool compare_values(const std::string& lhs, const std::string& op, const std::string& rhs) {
  if (op == "in") {
    return rhs.find(lhs) != std::string::npos;
  }
  if (op == "not in") {
    return rhs.find(lhs) == std::string::npos;
  }
  if (auto version = pep440::Version::parse(lhs)) {
    try {
      // Pre-releases count: python_full_version "3.13.0rc1" is >= "3.8".
      return pep440::Specifier::parse(op + rhs).contains(*version);
    } catch (const std::invalid_argument&) {
      // Not a version specifier (for instance "==posix"): compared as strings below.
    }
  }
  if (op == "==" || op == "===") {
    return lhs == rhs;
  }
  if (op == "!=") {
    return lhs != rhs;
  }
  if (op == "<") {
    return lhs < rhs;
  }
  if (op == "<=") {
    return lhs <= rhs;
  }
  if (op == ">") {
    return lhs > rhs;
  }
  if (op == ">=") {
    return lhs >= rhs;
  }
  throw std::invalid_argument("marker comparison '" + lhs + "' " + op + " '" + rhs + "' is undefined: " + op +
                              " needs PEP 440 versions on both sides");
}

const std::string& lookup(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) {
    throw std::invalid_argument("marker variable '" + name + "' is not set in the environment");
  }
  return it->second;
}

std::string operand_value(const Marker::Node::Operand& o, const std::map<std::string, std::string>& env) {
  return o.variable ? lookup(env, o.text) : o.text;
}

// A clause with `extra` on one side: the project's extras are a set, not one string, so
// == asks for membership and != for its absence (what pip gets by evaluating once per
// requested extra, for ==; and what a reader of `extra != "x"` means).
bool evaluate_extra(const Marker::Node& n, const std::map<std::string, std::string>& env,
                    const std::set<std::string>& extras) {
  bool extra_left = n.lhs.variable && n.lhs.text == "extra";
  const auto& other = extra_left ? n.rhs : n.lhs;
  std::string value = other.variable && other.text == "extra" ? "" : operand_value(other, env);
  value = normalize_project_name(value);
  std::set<std::string> candidates;
  for (const auto& e : extras) {
    candidates.insert(normalize_project_name(e));
  }
  if (candidates.empty()) {
    candidates.insert(""); // no extras requested: pip evaluates with extra = ""
  }
  std::string op = n.op == "!=" ? "==" : n.op;
  bool any = std::any_of(candidates.begin(), candidates.end(), [&](const std::string& e) {
    return extra_left ? compare_values(e, op, value) : compare_values(value, op, e);
  });
  return n.op == "!=" ? !any : any;
}

bool evaluate_node(const Marker::Node& n, const std::map<std::string, std::string>& env,
                   const std::set<std::string>& extras) {
  switch (n.kind) {
  case Marker::Node::Kind::all:
    return std::all_of(n.children.begin(), n.children.end(),
                       [&](const Marker::Node& c) { return evaluate_node(c, env, extras); });
  case Marker::Node::Kind::any:
    return std::any_of(n.children.begin(), n.children.end(),
                       [&](const Marker::Node& c) { return evaluate_node(c, env, extras); });
  case Marker::Node::Kind::compare:
    break;
  }
  if ((n.lhs.variable && n.lhs.text == "extra") || (n.rhs.variable && n.rhs.text == "extra")) {
    return evaluate_extra(n, env, extras);
  }
  return compare_values(operand_value(n.lhs, env), n.op, operand_value(n.rhs, env));
}

std::string render_operand(const Marker::Node::Operand& o) {
  if (o.variable) {
    return o.text;
  }
  // A string cannot contain its own quote character (PEP 508 has no escapes).
  return o.text.find('"') == std::string::npos ? "\"" + o.text + "\"" : "'" + o.text + "'";
}

std::string render(const Marker::Node& n, bool inside_and) {
  if (n.kind == Marker::Node::Kind::compare) {
    return render_operand(n.lhs) + " " + n.op + " " + render_operand(n.rhs);
  }
  bool is_all = n.kind == Marker::Node::Kind::all;
  std::string out;
  for (const auto& c : n.children) {
    out += (out.empty() ? "" : (is_all ? " and " : " or ")) + render(c, is_all);
  }
  return !is_all && inside_and ? "(" + out + ")" : out;
}

} // namespace

// The recursive-descent parser for markers, and the cursor Requirement::parse uses, so
// errors in either name a column of the text the user wrote.
class MarkerParser {
public:
  MarkerParser(std::string_view text, std::string what) : m_text(text), m_what(std::move(what)) {}
  static constexpr int k_max_depth = 32;

  [[noreturn]] void fail(const std::string& why, std::size_t at) const {
    throw std::invalid_argument("invalid " + m_what + " '" + std::string(m_text) + "': " + why + " at column " +
                                std::to_string(at + 1));
  }

  std::size_t pos() const { return m_pos; }
  bool at_end() const { return m_pos >= m_text.size(); }
  char peek() const { return at_end() ? '\0' : m_text[m_pos]; }
  void skip(std::size_t n = 1) { m_pos = std::min(m_pos + n, m_text.size()); }
  std::string_view text() const { return m_text; }

  // Skips spaces and tabs; whether there were any.
  bool skip_ws() {
    std::size_t start = m_pos;
    while (!at_end() && (peek() == ' ' || peek() == '\t')) {
      ++m_pos;
    }
    return m_pos > start;
  }

  std::string_view take_while(bool (*pred)(char)) {
    std::size_t start = m_pos;
    while (!at_end() && pred(peek())) {
      ++m_pos;
    }
    return m_text.substr(start, m_pos - start);
  }

  // A marker from the cursor to the end of the text.
  Marker parse_to_end() {
    Marker::Node root = parse_or();
    skip_ws();
    if (!at_end()) {
      fail("expected 'and', 'or' or the end of the marker", m_pos);
    }
    return Marker(std::make_shared<const Marker::Node>(std::move(root)));
  }

private:
  bool keyword(std::string_view word) {
    std::size_t start = m_pos;
    skip_ws();
    if (m_text.substr(m_pos, word.size()) == word &&
        (m_pos + word.size() == m_text.size() || !is_name_char(m_text[m_pos + word.size()]))) {
      m_pos += word.size();
      return true;
    }
    m_pos = start;
    return false;
  }

  // `and` binds tighter than `or`: or-of-ands, each list flattened.
  Marker::Node parse_or() {
    Marker::Node first = parse_and();
    if (!keyword("or")) {
      return first;
    }
    Marker::Node n;
    n.kind = Marker::Node::Kind::any;
    n.children.push_back(std::move(first));
    do {
      n.children.push_back(parse_and());
    } while (keyword("or"));
    return n;
  }

  Marker::Node parse_and() {
    Marker::Node first = parse_atom();
    if (!keyword("and")) {
      return first;
    }
    Marker::Node n;
    n.kind = Marker::Node::Kind::all;
    n.children.push_back(std::move(first));
    do {
      n.children.push_back(parse_atom());
    } while (keyword("and"));
    return n;
  }

  Marker::Node parse_atom() {
    skip_ws();
    if (peek() == '(') {
      std::size_t open = m_pos;
      // Parentheses nest through recursion: a hostile Requires-Dist of thousands of '('
      // would overflow the stack. Real markers nest two or three deep.
      if (++m_depth > k_max_depth) {
        fail("parentheses nested more than " + std::to_string(k_max_depth) + " deep", open);
      }
      skip();
      Marker::Node inner = parse_or();
      --m_depth;
      skip_ws();
      if (peek() != ')') {
        fail(at_end() ? "expected ')' to close the '(' at column " + std::to_string(open + 1)
                      : "expected 'and', 'or' or ')'",
             m_pos);
      }
      skip();
      return inner;
    }
    Marker::Node n;
    n.lhs = parse_operand();
    n.op = parse_op();
    n.rhs = parse_operand();
    return n;
  }

  Marker::Node::Operand parse_operand() {
    skip_ws();
    Marker::Node::Operand o;
    std::size_t start = m_pos;
    if (peek() == '"' || peek() == '\'') {
      char quote = peek();
      auto close = m_text.find(quote, m_pos + 1);
      if (close == std::string_view::npos) {
        fail("unterminated string", start);
      }
      o.text = std::string(m_text.substr(m_pos + 1, close - m_pos - 1));
      m_pos = close + 1;
      return o;
    }
    std::string_view name = take_while(is_name_char);
    if (name.empty()) {
      fail(at_end() ? "expected a marker variable or a quoted string, found the end"
                    : "expected a marker variable or a quoted string",
           start);
    }
    o.variable = true;
    o.text = canonical_variable(name);
    if (o.text.empty()) {
      fail("unknown marker variable '" + std::string(name) + "'", start);
    }
    return o;
  }

  std::string parse_op() {
    skip_ws();
    for (auto op : comparison_ops) {
      if (m_text.substr(m_pos, op.size()) == op) {
        m_pos += op.size();
        return std::string(op);
      }
    }
    if (keyword("in")) {
      return "in";
    }
    std::size_t start = m_pos;
    if (keyword("not")) {
      if (skip_ws() && keyword("in")) {
        return "not in";
      }
      m_pos = start;
    }
    fail("expected a comparison operator (==, !=, <, <=, >, >=, ~=, ===, in, not in)", m_pos);
  }

  std::string_view m_text;
  std::string m_what;
  std::size_t m_pos = 0;
  int m_depth = 0; // open parentheses (parse_atom)
};

Marker Marker::parse(std::string_view text) {
  return MarkerParser(text, "marker").parse_to_end();
}

bool Marker::evaluate(const std::map<std::string, std::string>& env, const std::set<std::string>& extras) const {
  return evaluate_node(*m_root, env, extras);
}

std::string Marker::str() const {
  return render(*m_root, false);
}

namespace {

// A PEP 508 identifier (project or extra name) at the cursor.
std::string parse_identifier(MarkerParser& p, const std::string& what) {
  std::size_t start = p.pos();
  std::string_view name = p.take_while(is_name_char);
  if (name.empty()) {
    p.fail("expected " + what, start);
  }
  if (!is_alnum(name.front()) || !is_alnum(name.back())) {
    p.fail(what + " '" + std::string(name) + "' must start and end with a letter or digit", start);
  }
  return std::string(name);
}

std::set<std::string> parse_extras(MarkerParser& p) {
  std::set<std::string> extras;
  p.skip(); // '['
  p.skip_ws();
  if (p.peek() == ']') {
    p.skip();
    return extras;
  }
  while (true) {
    p.skip_ws();
    extras.insert(normalize_project_name(parse_identifier(p, "an extra name")));
    p.skip_ws();
    if (p.peek() == ']') {
      p.skip();
      return extras;
    }
    if (p.peek() != ',') {
      p.fail("expected ',' or ']' in the extras", p.pos());
    }
    p.skip();
  }
}

pep440::SpecifierSet parse_specifiers(MarkerParser& p, std::string_view text, std::size_t at) {
  try {
    return pep440::SpecifierSet::parse(text);
  } catch (const std::invalid_argument& e) {
    p.fail(e.what(), at);
  }
}

} // namespace

Requirement Requirement::parse(std::string_view text) {
  MarkerParser p(text, "requirement");
  Requirement r;
  p.skip_ws();
  r.name = parse_identifier(p, "a project name");
  r.key = normalize_project_name(r.name);
  p.skip_ws();
  if (p.peek() == '[') {
    r.extras = parse_extras(p);
    p.skip_ws();
  }
  if (p.peek() == '@') {
    p.skip();
    p.skip_ws();
    std::size_t start = p.pos();
    r.url = std::string(p.take_while([](char c) { return c != ' ' && c != '\t'; }));
    if (r.url.empty()) {
      p.fail("expected a URL after '@'", start);
    }
    // A ';' right after the URL is part of it (URLs may contain ';'), so a marker after
    // a URL needs whitespace before its ';', as PEP 508 says.
    bool space = p.skip_ws();
    if (!p.at_end() && !(space && p.peek() == ';')) {
      p.fail("expected the end or ' ; marker' after the URL", p.pos());
    }
  } else if (p.peek() == '(') {
    std::size_t open = p.pos();
    auto close = text.find(')', open);
    if (close == std::string_view::npos) {
      p.fail("expected ')' to close the '('", open);
    }
    r.specifier = parse_specifiers(p, text.substr(open + 1, close - open - 1), open + 1);
    p.skip(close + 1 - open);
  } else if (std::string_view("<>=!~").find(p.peek()) != std::string_view::npos && !p.at_end()) {
    std::size_t start = p.pos();
    auto end = std::min(text.find(';', start), text.size());
    r.specifier = parse_specifiers(p, text.substr(start, end - start), start);
    p.skip(end - start);
  }
  p.skip_ws();
  if (p.peek() == ';') {
    p.skip();
    r.marker = p.parse_to_end();
  } else if (!p.at_end()) {
    p.fail("expected a version specifier, '[extras]', '@ URL' or '; marker'", p.pos());
  }
  return r;
}

std::string Requirement::str() const {
  std::string out = name;
  if (!extras.empty()) {
    std::string list;
    for (const auto& e : extras) {
      list += (list.empty() ? "" : ",") + e;
    }
    out += "[" + list + "]";
  }
  if (!url.empty()) {
    out += " @ " + url + (marker ? " " : "");
  } else {
    out += specifier.str();
  }
  if (marker) {
    out += "; " + marker->str();
  }
  return out;
}

std::map<std::string, std::string> marker_environment(const PythonTarget& target,
                                                      const std::string& python_full_version) {
  return {
      {"python_version", std::to_string(target.major) + "." + std::to_string(target.minor)},
      {"python_full_version", python_full_version},
      {"os_name", "posix"},
      {"sys_platform", "linux"},
      {"platform_system", "Linux"},
      {"platform_machine", target.arch},
      {"platform_release", ""},
      {"platform_version", ""},
      {"platform_python_implementation", "CPython"},
      {"implementation_name", "cpython"},
      {"implementation_version", python_full_version},
  };
}

} // namespace python
