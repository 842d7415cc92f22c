#include "python/metadata.hpp"

#include "python/pep440.hpp"
#include "util/encoding.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

namespace python {

namespace {

// The lines of `text` without their "\n" or "\r\n".
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    out.push_back(line);
    if (nl == std::string_view::npos) {
      break;
    }
    pos = nl + 1;
  }
  return out;
}

// Calls fn(lower-cased key, trimmed value) for each header up to the first empty line
// (the body follows it); a folded (indented) line continues the previous header.
template <typename Fn> void for_each_header(std::string_view text, Fn fn) {
  std::string key, value;
  auto flush = [&] {
    if (!key.empty()) {
      fn(util::ascii_lower(util::trim(key)), util::trim(value));
    }
    key.clear();
    value.clear();
  };
  for (std::string_view line : lines_of(text)) {
    if (line.empty()) {
      break;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (!key.empty()) {
        value += " " + util::trim(line);
      }
      continue;
    }
    flush();
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      continue;
    }
    key = std::string(line.substr(0, colon));
    value = std::string(line.substr(colon + 1));
  }
  flush();
}

} // namespace

Metadata parse_metadata(std::string_view text) {
  Metadata m;
  bool have_name = false, have_version = false;
  for_each_header(text, [&](const std::string& k, const std::string& v) {
    if (k == "name" && !have_name) {
      m.name = v;
      have_name = true;
    } else if (k == "version" && !have_version) {
      m.version = v;
      have_version = true;
    } else if (k == "requires-python" && !m.requires_python) {
      m.requires_python = v;
    } else if (k == "requires-dist") {
      m.requires_dist.push_back(v);
    } else if (k == "provides-extra") {
      m.provides_extra.push_back(v);
    }
  });
  return m;
}

WheelFile parse_wheel_file(std::string_view text) {
  WheelFile w;
  std::optional<std::string> version;
  for_each_header(text, [&](const std::string& k, const std::string& v) {
    if (k == "wheel-version" && !version) {
      version = v;
    } else if (k == "root-is-purelib") {
      w.root_is_purelib = util::ascii_lower(v) == "true";
    }
  });
  if (!version) {
    throw std::invalid_argument("it has no Wheel-Version");
  }
  // "MAJOR.MINOR", each a decimal number of at most 4 digits.
  auto number = [&](std::string_view s, int& out) {
    if (s.empty() || s.size() > 4 ||
        !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
      throw std::invalid_argument("its Wheel-Version '" + *version + "' is not MAJOR.MINOR");
    }
    out = std::stoi(std::string(s));
  };
  auto dot = version->find('.');
  if (dot == std::string::npos) {
    throw std::invalid_argument("its Wheel-Version '" + *version + "' is not MAJOR.MINOR");
  }
  number(std::string_view(*version).substr(0, dot), w.major);
  number(std::string_view(*version).substr(dot + 1), w.minor);
  return w;
}

std::vector<RecordEntry> parse_record(std::string_view text) {
  std::vector<RecordEntry> out;
  for (std::string_view line : lines_of(text)) {
    if (util::trim(line).empty()) {
      continue;
    }
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          fields.back().push_back('"');
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          fields.back().push_back(c);
        }
      } else if (c == '"' && fields.back().empty()) {
        quoted = true;
      } else if (c == ',') {
        fields.emplace_back();
      } else {
        fields.back().push_back(c);
      }
    }
    RecordEntry e;
    e.path = fields[0];
    e.hash = fields.size() > 1 ? util::trim(fields[1]) : "";
    e.size = fields.size() > 2 ? util::trim(fields[2]) : "";
    out.push_back(std::move(e));
  }
  return out;
}

std::string normalize_project_name(std::string_view name) {
  std::string out;
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) {
        out.push_back('-');
      }
      in_run = true;
      continue;
    }
    in_run = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string normalize_version(std::string_view version) {
  auto v = pep440::Version::parse(version);
  if (!v) {
    return util::ascii_lower(util::trim(version));
  }
  while (v->release.size() > 1 && v->release.back() == 0) {
    v->release.pop_back();
  }
  return v->str();
}

} // namespace python
