#include "python/requirements.hpp"

#include "python/wheel.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace python {

using util::Error;
using util::ErrorKind;

namespace {

// Words of a line split on blanks outside quotes.
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      cur.push_back(c);
      if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      cur.push_back(c);
    } else if (c == ' ' || c == '\t') {
      if (!cur.empty()) {
        out.push_back(cur);
        cur.clear();
      }
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

// " #" starts a comment (pip: a "#" at the start or after whitespace).
std::string strip_comment(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

bool is_url(const std::string& s) {
  return s.find("://") != std::string::npos;
}

struct Reader {
  RequirementsMode mode;
  RequirementsFile out;
  std::set<fs::path> open;                 // the include chain, for cycles
  std::map<std::string, std::string> seen; // project -> where
  bool constraints = false;                // reading a -c file

  [[noreturn]] void fail(const fs::path& file, int line, const std::string& message, std::string hint = {}) const {
    throw Error(ErrorKind::input, file.string() + ":" + std::to_string(line) + ": " + message, std::move(hint));
  }

  // An option's value: "--opt=value", "--opt value", "-ovalue" or "-o value".
  std::string value(const std::vector<std::string>& w, std::size_t& i, const std::string& opt, const fs::path& file,
                    int line) const {
    const std::string& word = w[i];
    if (word.size() > opt.size() && word.compare(0, opt.size(), opt) == 0) {
      std::string v = word.substr(opt.size());
      return v[0] == '=' ? v.substr(1) : v;
    }
    if (i + 1 >= w.size()) {
      fail(file, line, "option '" + opt + "' needs a value");
    }
    return w[++i];
  }

  void global_option(const std::vector<std::string>& w, const fs::path& file, int line) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string& o = w[i];
      for (const char* index_opt : {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--no-index"}) {
        std::string io = index_opt;
        if (out.first_index_option.empty() && o.compare(0, io.size(), io) == 0) {
          out.first_index_option = file.string() + ":" + std::to_string(line) + ": pip option '" + io + "'";
        }
      }
      auto is = [&](const char* a, const char* b = nullptr) {
        auto starts = [&](const char* x) {
          std::string s = x;
          return o == s || (o.compare(0, s.size(), s) == 0 && (s.size() == 2 || o[s.size()] == '='));
        };
        return starts(a) || (b && starts(b));
      };
      if (is("--index-url", "-i")) {
        out.index_url = value(w, i, o.rfind("--", 0) == 0 ? "--index-url" : "-i", file, line);
      } else if (is("--extra-index-url")) {
        out.extra_index_urls.push_back(value(w, i, "--extra-index-url", file, line));
      } else if (is("--find-links", "-f")) {
        std::string v = value(w, i, o.rfind("--", 0) == 0 ? "--find-links" : "-f", file, line);
        out.find_links.push_back(is_url(v) ? v : (file.parent_path() / v).lexically_normal().string());
      } else if (o == "--no-index") {
        out.no_index = true;
      } else if (is("--requirement", "-r")) {
        fs::path inc = value(w, i, o.rfind("--", 0) == 0 ? "--requirement" : "-r", file, line);
        if (is_url(inc.string())) {
          fail(file, line, "a requirements include by URL is not read",
               "download it next to this file and use -r FILE");
        }
        read(inc.is_absolute() ? inc : file.parent_path() / inc, file, line);
      } else if (mode == RequirementsMode::resolve && is("--constraint", "-c")) {
        fs::path inc = value(w, i, o.rfind("--", 0) == 0 ? "--constraint" : "-c", file, line);
        if (is_url(inc.string())) {
          fail(file, line, "a constraints file by URL is not read", "download it next to this file and use -c FILE");
        }
        bool was = constraints;
        constraints = true;
        read(inc.is_absolute() ? inc : file.parent_path() / inc, file, line);
        constraints = was;
      } else if (mode == RequirementsMode::resolve && o == "--pre") {
        out.pre = true;
      } else if (is("--constraint", "-c") || is("--editable", "-e")) {
        fail(file, line, "pip option '" + o.substr(0, o.find('=')) + "' has no meaning for a wheels layer",
             "remove it: a lock pins every requirement with == and --hash");
      } else if (o == "--prefer-binary" || o == "--only-binary" || o.rfind("--only-binary=", 0) == 0 ||
                 o == "--require-hashes" || o.rfind("--trusted-host", 0) == 0 || o == "--pre") {
        // Always so here (wheels only, hashes always checked, TLS trust comes from
        // --insecure-registry/--ca-file); a value-taking form consumes its value.
        if ((o == "--only-binary" || o == "--trusted-host") && i + 1 < w.size()) {
          ++i;
        }
      } else {
        fail(file, line, "unknown pip option '" + o.substr(0, o.find('=')) + "'",
             mode == RequirementsMode::resolve
                 ? "the options lock reads are -i/--index-url, --extra-index-url, -f/--find-links, --no-index, "
                   "-r, -c, --pre and --hash"
                 : "the options a lock may carry are -i/--index-url, --extra-index-url, -f/--find-links, "
                   "--no-index, -r and --hash");
      }
    }
  }

  void requirement(const std::vector<std::string>& w, std::size_t first_option, const fs::path& file, int line) {
    RequirementLine r;
    r.file = file;
    r.line = line;
    for (std::size_t i = 0; i < first_option; ++i) {
      r.text += (i ? " " : "") + w[i];
    }
    try {
      r.requirement = Requirement::parse(r.text);
    } catch (const std::invalid_argument& e) {
      fail(file, line, "'" + r.text + "' is not a valid requirement: " + e.what(),
           mode == RequirementsMode::resolve
               ? "write NAME, optionally with [extras], a PEP 440 specifier (>=1.2,<2) and '; marker'"
               : "write NAME==VERSION, optionally with [extras] and '; marker'");
    }
    if (!r.requirement.url.empty()) {
      fail(file, line, "'" + r.text + "' is a direct URL requirement",
           "list the wheel on an index or a find-links page and pin it as NAME==VERSION --hash=sha256:HEX");
    }
    for (std::size_t i = first_option; i < w.size(); ++i) {
      const std::string& o = w[i];
      std::string h;
      if (o.rfind("--hash=", 0) == 0) {
        h = o.substr(7);
      } else if (o == "--hash" && i + 1 < w.size()) {
        h = w[++i];
      } else {
        fail(file, line, "option '" + o + "' after a requirement", "only --hash=sha256:HEX may follow a requirement");
      }
      auto colon = h.find(':');
      if (colon == std::string::npos || h.substr(0, colon) != "sha256") {
        fail(file, line, "'" + h + "': only sha256 hashes are supported", "use --hash=sha256:HEX (sha256sum FILE.whl)");
      }
      std::string hex = h.substr(colon + 1);
      std::transform(hex.begin(), hex.end(), hex.begin(), [](unsigned char c) { return std::tolower(c); });
      if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
        fail(file, line, "'" + h + "' is not a sha256 (64 hex digits)");
      }
      r.sha256.push_back(hex);
    }
    if (constraints && !r.requirement.extras.empty()) {
      fail(file, line, "'" + r.text + "': a constraint cannot have extras (pip refuses them too)",
           "constrain the project alone: " + r.requirement.name + r.requirement.specifier.str());
    }
    if (mode == RequirementsMode::resolve && !r.sha256.empty() && r.pinned().empty()) {
      fail(file, line, "'" + r.text + "' has --hash but is not pinned with ==",
           "pin it (NAME==VERSION --hash=...) or drop the hash: the lock writes the hashes");
    }
    if (mode == RequirementsMode::resolve) {
      (constraints ? out.constraints : out.requirements).push_back(std::move(r));
      return;
    }
    if (r.pinned().empty()) {
      fail(file, line, "'" + r.text + "' is not pinned with ==",
           mode == RequirementsMode::lock ? "lock every wheel as NAME==VERSION --hash=sha256:HEX "
                                            "(paddle-image lock or pip-compile --generate-hashes)"
                                          : "pin it to one version (NAME==VERSION); paddle-image lock does not "
                                            "resolve ranges");
    }
    // A line with a marker may have no hashes: pip checks hashes only of what it installs,
    // and a lock written for a target its marker excludes cannot hash what the index may
    // not have. The build refuses it where the marker includes the target.
    if (mode == RequirementsMode::lock && r.sha256.empty() && !r.requirement.marker) {
      fail(file, line, "'" + r.text + "' has no --hash=sha256:",
           "add the wheel's sha256 (paddle-image lock writes them; sha256sum FILE.whl)");
    }
    out.requirements.push_back(std::move(r));
  }

  void read(const fs::path& path, const fs::path& from, int from_line) {
    // The error_code forms: a path too long or not searchable is an input error below,
    // never a filesystem_error (found by fuzz_requirements).
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(path, ec);
    if (ec) {
      canon = fs::absolute(path, ec).lexically_normal();
    }
    if (open.count(canon)) {
      fail(from, from_line, "-r " + path.string() + " includes itself (an include cycle)");
    }
    std::string text;
    try {
      // Only regular files: `-r /dev/zero` or a FIFO would read forever.
      if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
        throw Error(ErrorKind::input, path.string() + " is not a regular file", "name a requirements file");
      }
      text = util::read_file(path);
    } catch (const Error& e) {
      if (from.empty()) {
        throw;
      }
      throw Error(e.kind(), from.string() + ":" + std::to_string(from_line) + ": -r: " + e.what(), e.hint());
    }
    open.insert(canon);
    std::istringstream in(text);
    std::string raw;
    std::string logical;
    int line_no = 0;
    int start = 0;
    auto flush = [&]() {
      std::string l = util::trim(strip_comment(logical));
      logical.clear();
      if (l.empty()) {
        return;
      }
      auto w = words_of(l);
      std::size_t first_option = 0;
      while (first_option < w.size() && w[first_option][0] != '-') {
        ++first_option;
      }
      if (first_option == 0) {
        global_option(w, path, start);
      } else {
        requirement(w, first_option, path, start);
      }
    };
    while (std::getline(in, raw)) {
      ++line_no;
      if (logical.empty()) {
        start = line_no;
      }
      std::string t = raw;
      if (!t.empty() && t.back() == '\r') {
        t.pop_back();
      }
      // A control byte (a NUL, an escape) is no part of a requirement, and would cut or
      // forge the message that quotes the line.
      if (auto bad =
              std::find_if(t.begin(), t.end(),
                           [](char c) { return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f; });
          bad != t.end()) {
        fail(path, line_no,
             "a control byte (0x" + util::hex_encode(std::string_view(&*bad, 1)) + ") at column " +
                 std::to_string(bad - t.begin() + 1),
             "a requirements file is text: remove the byte (a file saved in UTF-16 or a binary file named by -r "
             "shows this)");
      }
      // A whole-line comment never continues (pip), even when it ends in "\"; inside a
      // continued requirement it ends that requirement.
      if (auto first = t.find_first_not_of(" \t"); first != std::string::npos && t[first] == '#') {
        flush();
        continue;
      }
      // A comment ends the logical line even after a continuation (pip joins first,
      // then strips comments; "#" inside a continued line comments out the rest).
      if (!t.empty() && t.back() == '\\') {
        logical += t.substr(0, t.size() - 1) + " ";
        continue;
      }
      logical += t;
      flush();
    }
    flush();
    open.erase(canon);
  }
};

} // namespace

std::string RequirementLine::pinned() const {
  const auto& items = requirement.specifier.items;
  if (items.size() != 1 || (items[0].op != "==" && items[0].op != "===") ||
      items[0].version.find('*') != std::string::npos) {
    return "";
  }
  return items[0].version;
}

RequirementsFile parse_requirements(const fs::path& path, RequirementsMode mode) {
  Reader r{mode, {}, {}, {}};
  r.read(path, {}, 0);
  std::map<std::string, const RequirementLine*> seen;
  for (const auto& req : r.out.requirements) {
    if (mode == RequirementsMode::resolve) {
      break; // the resolver intersects a project's lines
    }
    auto [it, fresh] = seen.emplace(req.requirement.key, &req);
    // The same project twice is fine only when markers split it (one line for
    // python_version < "3.10", another for the rest); the build picks per target.
    if (!fresh && !(req.requirement.marker && it->second->requirement.marker)) {
      throw Error(ErrorKind::input,
                  req.where() + ": " + req.requirement.key + " is listed again (first at " + it->second->where() + ")",
                  "keep one line per project");
    }
  }
  return r.out;
}

} // namespace python
