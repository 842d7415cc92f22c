#include "python/metadata.hpp"

#include "python/pep440.hpp"

#include <algorithm>
#include <cctype>

namespace python {

namespace {

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) {
    return {};
  }
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

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

} // namespace

Metadata parse_metadata(std::string_view text) {
  Metadata m;
  bool have_name = false, have_version = false;
  std::string key, value;
  auto flush = [&] {
    if (key.empty()) {
      return;
    }
    std::string k = lower(trim(key));
    std::string v = trim(value);
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
    key.clear();
    value.clear();
  };
  for (std::string_view line : lines_of(text)) {
    if (line.empty()) {
      break; // the body (the long description) follows the first empty line
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (!key.empty()) {
        value += " " + trim(line); // a folded header
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
  return m;
}

std::vector<RecordEntry> parse_record(std::string_view text) {
  std::vector<RecordEntry> out;
  for (std::string_view line : lines_of(text)) {
    if (trim(line).empty()) {
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
    e.hash = fields.size() > 1 ? trim(fields[1]) : "";
    e.size = fields.size() > 2 ? trim(fields[2]) : "";
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
    return lower(trim(version));
  }
  while (v->release.size() > 1 && v->release.back() == 0) {
    v->release.pop_back();
  }
  return v->str();
}

} // namespace python
