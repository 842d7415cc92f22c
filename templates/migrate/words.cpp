// The words of an instruction as a shell or Dockerfile reads them: quotes and escapes,
// the JSON form, image paths, and $VAR substitution.
#include "templates/migrate/mapper.hpp"

#include "spec/env_value.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace templates::migrate {

// An instruction as a message or the spec's comment shows it: its first line (a
// heredoc's body is text, not more instructions), cut at 120 characters.
std::string shown_instruction(const std::string& text) {
  auto eol = text.find('\n');
  std::string line = eol == std::string::npos ? text : text.substr(0, eol);
  // A continued line's blanks (its lines' indentation) shown as one.
  std::string t;
  for (char c : line) {
    bool blank = c == ' ' || c == '\t';
    if (!blank || t.empty() || t.back() != ' ') {
      t += blank ? ' ' : c;
    }
  }
  if (eol != std::string::npos) {
    t += " (heredoc body not shown)";
  }
  return t.size() > 120 ? t.substr(0, 117) + "..." : t;
}

std::string upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return s;
}

// Shell-like words: quotes removed, backslash escapes (outside single quotes) applied.
// `vars` is set when a '$' appears outside single quotes.
std::vector<std::string> words(const std::string& s, bool* vars) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (c == '$' && vars != nullptr) {
      *vars = true;
    }
    if (c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      in_word = true;
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_word) {
        out.push_back(cur);
        cur.clear();
        in_word = false;
      }
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) {
    out.push_back(cur);
  }
  return out;
}

// ["a", "b"] -> {a, b}; nullopt when the text is not a JSON array of strings.
std::optional<std::vector<std::string>> json_form(const std::string& args) {
  if (args.empty() || args[0] != '[') {
    return std::nullopt;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(args);
    if (!j.is_array()) {
      return std::nullopt;
    }
    std::vector<std::string> v;
    for (const auto& e : j) {
      if (!e.is_string()) {
        return std::nullopt;
      }
      v.push_back(e.get<std::string>());
    }
    return v;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string join_path(const std::string& dir, const std::string& p) {
  if (!p.empty() && p[0] == '/') {
    return p;
  }
  std::string d = dir.empty() ? "/" : dir;
  if (d.back() != '/') {
    d += '/';
  }
  return d + (p == "." ? "" : p.rfind("./", 0) == 0 ? p.substr(2) : p);
}

bool is_remote_source(const std::string& s) {
  return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0 || s.rfind("git@", 0) == 0;
}

bool is_archive(const std::string& s) {
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst"}) {
    std::string e = ext;
    if (s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return false;
}

// `s` split at the blanks outside quotes, each piece as written (quotes and
// backslashes kept): ENV's NAME=value pairs before substitution.
std::vector<std::string> raw_words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote == 0 && (c == ' ' || c == '\t')) {
      if (!cur.empty()) {
        out.push_back(cur);
        cur.clear();
      }
      continue;
    }
    if (c == '\\' && quote != '\'' && i + 1 < s.size()) {
      cur += c;
      cur += s[++i];
      continue;
    }
    if ((c == '"' || c == '\'') && (quote == 0 || quote == c)) {
      quote = quote == 0 ? c : 0;
    }
    cur += c;
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

// Dockerfile's substitution: $NAME, ${NAME}, ${NAME:-word} and ${NAME:+word}, not inside
// single quotes nor after a backslash (`\$` stays, for words() to unescape). A variable
// with no value is left as written and named in *missing (the first one).
std::string expand(const std::string& s, const Vars& vars, std::string* missing) {
  std::string out;
  bool single = false;
  auto value_of = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : it->second;
  };
  const auto is_name = spec::env_name_char;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && !single && i + 1 < s.size()) {
      out += c;
      out += s[++i];
      continue;
    }
    if (c == '\'') {
      single = !single;
    }
    if (c != '$' || single || i + 1 >= s.size()) {
      out += c;
      continue;
    }
    std::size_t start = i;
    std::string name, op, word;
    if (s[i + 1] == '{') {
      std::size_t close = s.find('}', i + 2);
      if (close == std::string::npos) {
        out += c;
        continue;
      }
      std::string inner = s.substr(i + 2, close - i - 2);
      std::size_t n = 0;
      while (n < inner.size() && is_name(inner[n], n == 0)) {
        ++n;
      }
      name = inner.substr(0, n);
      if (n < inner.size()) {
        op = inner.substr(n, 2);
        word = inner.substr(std::min(inner.size(), n + 2));
        if (op != ":-" && op != ":+") {
          out += s.substr(start, close + 1 - start); // a form Dockerfile does not expand either
          i = close;
          continue;
        }
      }
      i = close;
    } else {
      std::size_t n = i + 1;
      while (n < s.size() && is_name(s[n], n == i + 1)) {
        ++n;
      }
      if (n == i + 1) {
        out += c;
        continue;
      }
      name = s.substr(i + 1, n - i - 1);
      i = n - 1;
    }
    std::optional<std::string> v = value_of(name);
    if (op == ":-") {
      out += v && !v->empty() ? *v : expand(word, vars, missing);
    } else if (op == ":+") {
      out += v && !v->empty() ? expand(word, vars, missing) : "";
    } else if (v) {
      out += *v;
    } else {
      if (missing != nullptr && missing->empty()) {
        *missing = name;
      }
      out += s.substr(start, i + 1 - start);
    }
  }
  return out;
}

} // namespace templates::migrate
