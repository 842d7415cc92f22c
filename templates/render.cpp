#include "templates/render.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <kainjow/mustache.hpp>
#include <optional>

namespace templates {

using util::Error;
using util::ErrorKind;

void check_template_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error(ErrorKind::usage, "--template-dir " + dir.string() + ": not a directory",
                "copy the templates to change from templates/files/ into a directory and name it");
  }
  std::vector<std::string> known;
  for (const auto& e : embedded_templates()) {
    known.emplace_back(e.name);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string f = entry.path().filename().string();
    if (f.size() > 9 && f.compare(f.size() - 9, 9, ".mustache") == 0 &&
        std::find(known.begin(), known.end(), f) == known.end()) {
      std::string near = util::closest(f, known);
      throw Error(ErrorKind::usage, "--template-dir " + dir.string() + ": " + f + " is not a template name",
                  near.empty() ? "template files: " + util::join(known, ", ") : "did you mean '" + near + "'?");
    }
  }
}

Template find_template(const std::string& name, const std::filesystem::path& template_dir) {
  if (!template_dir.empty()) {
    check_template_dir(template_dir);
    std::filesystem::path p = template_dir / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) {
      return Template{name, util::read_file(p), p.string()};
    }
  }
  for (const auto& e : embedded_templates()) {
    if (name == e.name) {
      return Template{name, e.content, "embedded:" + name};
    }
  }
  throw Error(ErrorKind::internal, "no template named " + name);
}

std::string yaml_quote(const std::string& value) {
  const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    auto next = [&](std::size_t k) { return i + k < value.size() ? static_cast<unsigned char>(value[i + k]) : 0; };
    switch (c) {
    case '"':
      out += "\\\"";
      continue;
    case '\\':
      out += "\\\\";
      continue;
    case '\n':
      out += "\\n";
      continue;
    case '\t':
      out += "\\t";
      continue;
    case '\r':
      out += "\\r";
      continue;
    default:
      break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {
      // A C1 control (U+0080..U+009F, NEL among them) as \xNN.
      out += "\\x";
      out += hex[next(1) >> 4];
      out += hex[next(1) & 15];
      ++i;
    } else if (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {
      out += next(2) == 0xa8 ? "\\L" : "\\P";
      i += 2;
    } else if (c == 0xef && next(1) == 0xbb && next(2) == 0xbf) {
      out += "\\uFEFF";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string dockerfile_quote(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\n' || c == '\r') {
      throw Error(ErrorKind::input,
                  "value '" + util::escape_bytes(value) + "' has a line break, which a Dockerfile cannot hold",
                  "remove the line break from the spec value");
    }
    if (c == '"' || c == '\\' || c == '$') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

namespace {

struct Tag {
  char kind = 'v'; // v (escaped), & (raw), # ^ / ! > =
  std::string name;
  std::size_t line = 0;
  std::size_t begin = 0; // offsets of the tag in the text
  std::size_t end = 0;
};

[[noreturn]] void fail_at(const Template& t, std::size_t line, const std::string& what, const std::string& hint = {}) {
  throw Error(ErrorKind::input, t.origin + ":" + std::to_string(line) + ": " + what, hint);
}

// The tags of a template in order, with their lines; follows {{=<% %>=}} delimiter changes.
std::vector<Tag> scan_tags(const Template& t) {
  std::vector<Tag> tags;
  const std::string& s = t.text;
  std::string open = "{{";
  std::string close = "}}";
  std::size_t pos = 0;
  std::size_t line = 1;
  std::size_t counted = 0;
  while (true) {
    std::size_t start = s.find(open, pos);
    if (start == std::string::npos) {
      break;
    }
    for (; counted < start; ++counted) {
      line += s[counted] == '\n' ? 1 : 0;
    }
    std::size_t after = start + open.size();
    Tag tag;
    tag.line = line;
    tag.begin = start;
    std::string body;
    if (open == "{{" && after < s.size() && s[after] == '{') {
      std::size_t end = s.find("}}}", after);
      if (end == std::string::npos) {
        fail_at(t, line, "'{{{' is never closed with '}}}'");
      }
      tag.kind = '&';
      tag.name = util::trim(s.substr(after + 1, end - after - 1));
      pos = end + 3;
    } else {
      std::size_t end = s.find(close, after);
      if (end == std::string::npos) {
        fail_at(t, line, "'" + open + "' is never closed with '" + close + "'");
      }
      body = util::trim(s.substr(after, end - after));
      pos = end + close.size();
      if (!body.empty() && std::string("#^/!>&=").find(body[0]) != std::string::npos) {
        tag.kind = body[0];
        tag.name = util::trim(body.substr(1));
      } else {
        tag.name = body;
      }
      if (tag.kind == '=') {
        if (tag.name.empty() || tag.name.back() != '=') {
          fail_at(t, line, "a delimiter change must look like {{=<% %>=}}");
        }
        std::string d = util::trim(tag.name.substr(0, tag.name.size() - 1));
        std::size_t sp = d.find_first_of(" \t");
        if (sp == std::string::npos) {
          fail_at(t, line, "a delimiter change needs two delimiters, e.g. {{=<% %>=}}");
        }
        open = d.substr(0, sp);
        close = util::trim(d.substr(sp));
      }
    }
    tag.end = pos;
    tags.push_back(tag);
  }
  return tags;
}

constexpr char k_keep = '\x01';

// Mustache's "standalone" rule: a line holding only a section, inverted, closing,
// comment or delimiter tag (and blanks) leaves no line in the output.
std::string strip_standalone(const Template& t) {
  const std::string& s = t.text;
  std::string out;
  std::size_t copied = 0;
  for (const Tag& tag : scan_tags(t)) {
    if (std::string("#^/!=").find(tag.kind) == std::string::npos) {
      continue;
    }
    std::size_t ls = tag.begin;
    while (ls > copied && (s[ls - 1] == ' ' || s[ls - 1] == '\t')) {
      --ls;
    }
    bool at_line_start = ls == 0 || s[ls - 1] == '\n';
    std::size_t le = tag.end;
    while (le < s.size() && (s[le] == ' ' || s[le] == '\t' || s[le] == '\r')) {
      ++le;
    }
    bool at_line_end = le == s.size() || s[le] == '\n';
    if (!at_line_start || !at_line_end || ls < copied) {
      continue;
    }
    out.append(s, copied, ls - copied);
    out.append(s, tag.begin, tag.end - tag.begin);
    // kainjow drops a rendered line that held a section tag and came out empty: the
    // marker keeps the line the tag is now glued to (a blank line of the template).
    out += k_keep;
    copied = le < s.size() ? le + 1 : le;
  }
  out.append(s, copied, std::string::npos);
  return out;
}

std::vector<std::string> keys_of(const nlohmann::json& o) {
  std::vector<std::string> k;
  if (o.is_object()) {
    for (auto it = o.begin(); it != o.end(); ++it) {
      k.push_back(it.key());
    }
  }
  return k;
}

kainjow::mustache::data to_data(const nlohmann::json& j) {
  using kainjow::mustache::data;
  if (j.is_object()) {
    data d{data::type::object};
    for (auto it = j.begin(); it != j.end(); ++it) {
      d.set(it.key(), to_data(it.value()));
    }
    return d;
  }
  if (j.is_array()) {
    data d{data::type::list};
    for (const auto& e : j) {
      d.push_back(to_data(e));
    }
    return d;
  }
  if (j.is_boolean()) {
    return data{j.get<bool>()};
  }
  if (j.is_string()) {
    return data{j.get<std::string>()};
  }
  if (j.is_null()) {
    return data{std::string()};
  }
  return data{j.dump()};
}

} // namespace

void check_variables(const Template& t, const nlohmann::json& schema) {
  static const nlohmann::json k_empty = nlohmann::json::object();
  std::vector<const nlohmann::json*> scopes{&schema};
  std::vector<Tag> open_sections;
  for (const Tag& tag : scan_tags(t)) {
    if (tag.kind == '!' || tag.kind == '=') {
      continue;
    }
    if (tag.kind == '>') {
      fail_at(t, tag.line, "partials ({{> " + tag.name + "}}) are not supported", "copy the text into the template");
    }
    if (tag.kind == '/') {
      if (open_sections.empty() || open_sections.back().name != tag.name) {
        fail_at(t, tag.line, "{{/" + tag.name + "}} closes no open section",
                open_sections.empty() ? "remove it" : "the open section is '" + open_sections.back().name + "'");
      }
      open_sections.pop_back();
      scopes.pop_back();
      continue;
    }
    if (tag.name.empty()) {
      fail_at(t, tag.line, "empty tag");
    }
    const nlohmann::json* node = nullptr;
    if (tag.name == ".") {
      if (scopes.size() < 2) {
        fail_at(t, tag.line, "'{{.}}' outside a section");
      }
      node = &k_empty;
    } else {
      std::vector<std::string> parts = util::split(tag.name, '.');
      for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
        if ((*it)->is_object() && (*it)->contains(parts[0])) {
          node = &(**it)[parts[0]];
          break;
        }
      }
      if (node == nullptr) {
        std::vector<std::string> known;
        for (const auto* sc : scopes) {
          for (const auto& k : keys_of(*sc)) {
            known.push_back(k);
          }
        }
        std::string near = util::closest(parts[0], known);
        fail_at(t, tag.line, "unknown variable '" + tag.name + "'",
                near.empty() ? "variables here: " + util::join(known, ", ") : "did you mean '" + near + "'?");
      }
      for (std::size_t i = 1; i < parts.size(); ++i) {
        if (!node->is_object() || !node->contains(parts[i])) {
          std::string near = util::closest(parts[i], keys_of(*node));
          fail_at(t, tag.line, "unknown variable '" + tag.name + "'",
                  near.empty() ? "'" + parts[0] + "' has: " + util::join(keys_of(*node), ", ")
                               : "did you mean '" + near + "'?");
        }
        node = &(*node)[parts[i]];
      }
    }
    if (tag.kind == '#' || tag.kind == '^') {
      open_sections.push_back(tag);
      scopes.push_back(node->is_object() ? node : &k_empty);
    }
  }
  if (!open_sections.empty()) {
    fail_at(t, open_sections.back().line, "section '" + open_sections.back().name + "' is never closed",
            "add {{/" + open_sections.back().name + "}}");
  }
}

std::string render(const Template& t, const nlohmann::json& data, const nlohmann::json& schema, Escape escape) {
  check_variables(t, schema);
  if (t.text.find(k_keep) != std::string::npos) {
    throw Error(ErrorKind::input, t.origin + ": the template holds a \\x01 byte", "remove it");
  }
  kainjow::mustache::mustache m{strip_standalone(t)};
  if (!m.is_valid()) {
    throw Error(ErrorKind::input, t.origin + ": " + m.error_message(), "check the template's tags");
  }
  std::optional<Error> escape_error;
  m.set_custom_escape([&](const std::string& v) -> std::string {
    switch (escape) {
    case Escape::yaml:
      return yaml_quote(v);
    case Escape::github:
      if (v.find("${{") != std::string::npos && !escape_error) {
        escape_error = Error(ErrorKind::input,
                             "value '" + util::escape_bytes(v) +
                                 "' holds '${{', which GitHub Actions would evaluate as an expression",
                             "rename it without '${{'");
      }
      return yaml_quote(v);
    case Escape::gitlab: {
      std::string doubled;
      for (char c : v) {
        doubled += c;
        if (c == '$') {
          doubled += '$';
        }
      }
      return yaml_quote(doubled);
    }
    case Escape::dockerfile:
      try {
        return dockerfile_quote(v);
      } catch (const Error& e) {
        if (!escape_error) {
          escape_error = e;
        }
        return "";
      }
    case Escape::none:
      break;
    }
    return v;
  });
  std::string out = m.render(to_data(data));
  std::erase(out, k_keep);
  if (escape_error) {
    throw escape_error->with_context(t.origin);
  }
  if (!m.is_valid()) {
    throw Error(ErrorKind::input, t.origin + ": " + m.error_message(), "check the template's tags");
  }
  return out;
}

std::string comment_text(std::string_view value) {
  std::string out = util::escape_bytes(value);
  for (const auto& [seq, esc] : {std::pair<std::string_view, std::string_view>{"\xC2\x85", "\\u0085"},
                                 {"\xE2\x80\xA8", "\\u2028"},
                                 {"\xE2\x80\xA9", "\\u2029"}}) {
    for (auto at = out.find(seq); at != std::string::npos; at = out.find(seq, at + esc.size())) {
      out.replace(at, seq.size(), esc);
    }
  }
  return out;
}

} // namespace templates
