#include "templates/from_dockerfile.hpp"

#include "spec/env_value.hpp"
#include "templates/docker_lex.hpp"
#include "templates/render.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace templates {

using util::Error;
using util::ErrorKind;

namespace {

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

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t b = 0;
  while (b <= text.size()) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) {
      if (b < text.size()) {
        lines.push_back(text.substr(b));
      }
      break;
    }
    lines.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return lines;
}

// Shell-like words: quotes removed, backslash escapes (outside single quotes) applied.
// `vars` is set when a '$' appears outside single quotes.
std::vector<std::string> words(const std::string& s, bool* vars = nullptr) {
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

struct Copy {
  std::string from;
  std::string to;
  std::string owner;
  std::string mode;
  std::string url;    // ADD [--checksum=sha256:HEX] URL, wget, curl: a download rule in place of `from`
  std::string sha256; // its hex digest ("": the sources lock pins it)
  bool extract = false;
  int strip_components = 0;
  std::string git; // git clone URL [&& git checkout X]: a git source
  std::string commit;
  std::string ref;        // a branch or tag (or HEAD) the sources lock pins
  std::string symlink;    // ln -s TARGET LINK: a symlink rule (to: LINK)
  bool directory = false; // mkdir [-p] [-m MODE] DIR: a directory rule (to: DIR)
};

Copy local_copy(std::string from, std::string to, std::string owner, std::string mode) {
  Copy c;
  c.from = std::move(from);
  c.to = std::move(to);
  c.owner = std::move(owner);
  c.mode = std::move(mode);
  return c;
}

struct Layer {
  std::string name;
  bool wheels = false;
  bool debs = false;                 // a debs layer: `packages` from the base's distribution
  bool data = false;                 // a data layer (downloads)
  std::vector<std::string> packages; // debs: as apt-get install named them
  bool recommends = false;           // debs: the Dockerfile's apt-get installed Recommends
  std::vector<Copy> copies;
  std::string lock;
  std::vector<std::string> indexes;
  std::vector<std::string> find_links;
};

struct Mapping {
  std::string base = "scratch";
  std::string platform;
  std::vector<Layer> layers;
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> ports;
  std::string workdir;
  std::string user;
  std::string stop_signal;
  std::set<std::string> names;
};

std::string layer_name(Mapping& m, std::string want) {
  std::string n;
  for (char c : util::ascii_lower(want)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    n += ok ? c : '-';
  }
  n.erase(0, n.find_first_not_of('-'));
  if (n.empty()) {
    n = "files";
  }
  std::string out = n;
  for (int i = 2; m.names.count(out) != 0; ++i) {
    out = n + "-" + std::to_string(i);
  }
  m.names.insert(out);
  return out;
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

// The variables an instruction may refer to: name -> value (nullopt: declared by an ARG
// without a default, which only a --build-arg would give).
using Vars = DockerVars;

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

class Mapper {
public:
  Mapper(std::string context, std::string file_name, const FromDockerfileOptions& options)
      : m_context(std::move(context)), m_file(std::move(file_name)), m_requirement_error(options.requirement_error),
        m_build_args(options.build_args) {}

  void instruction(const DockerInstruction& raw) {
    m_cur = &raw;
    const std::string& k = raw.keyword;
    if (k == "ARG" && !m_seen_from) {
      arg(raw.args, m_global, nullptr); // a global ARG: for the FROM lines, not a stage of its own
      return;
    }
    m_stage_ins.push_back(&raw);
    if (k == "FROM") {
      m_seen_from = true;
      std::string missing;
      std::string args = expand(raw.args, m_global, &missing);
      if (!missing.empty()) {
        throw Error(ErrorKind::input,
                    m_file + ":" + std::to_string(raw.line) + ": FROM refers to $" + missing +
                        ", which no ARG before the first FROM gives a value",
                    "give it a default (ARG " + missing + "=VALUE before the FROM) or write the image reference");
      }
      from(args);
      return;
    }
    // Every other instruction sees the stage's ARGs and ENVs (RUN too: its shell gets them).
    DockerInstruction in = raw;
    m_missing.clear();
    if (k != "ENV" && k != "ARG") {
      in.args = expand(raw.args, m_vars, &m_missing);
    }
    if (k == "COPY" || k == "ADD") {
      copy(in);
    } else if (k == "WORKDIR") {
      if (!no_vars(in.args)) {
        return;
      }
      auto w = words(in.args);
      m.workdir = join_path(m.workdir, w.empty() ? "/" : w[0]);
    } else if (k == "ENV") {
      env(in);
    } else if (k == "LABEL") {
      label(in.args);
    } else if (k == "MAINTAINER") {
      maintainer(raw.args);
    } else if (k == "ENTRYPOINT" || k == "CMD") {
      std::vector<std::string> v;
      if (auto j = json_form(in.args)) {
        v = *j;
      } else {
        v = {"/bin/sh", "-c", in.args};
      }
      if (k == "ENTRYPOINT") {
        m.entrypoint = v;
        m.cmd.reset(); // as docker does: a new ENTRYPOINT clears the CMD before it
      } else {
        m.cmd = v;
      }
    } else if (k == "EXPOSE") {
      if (!no_vars(in.args)) {
        return;
      }
      for (const auto& p : words(in.args)) {
        m.ports.push_back(p);
      }
    } else if (k == "USER") {
      if (no_vars(in.args)) {
        m.user = words(in.args).empty() ? "" : words(in.args)[0];
        // A user this Dockerfile's useradd made is not in the base's /etc/passwd: by its ids.
        if (auto it = m_users.find(m.user.substr(0, m.user.find(':'))); it != m_users.end()) {
          m.user = it->second;
        }
      }
    } else if (k == "STOPSIGNAL") {
      m.stop_signal = util::trim(in.args, " \t\r");
    } else if (k == "RUN") {
      run(in.args);
    } else if (k == "ARG") {
      arg(in.args, m_vars, &m_global);
    } else {
      skip(k + " has no spec equivalent");
    }
  }

  // A new stage starts: everything mapped so far belonged to an earlier stage.
  void restart() {
    for (const DockerInstruction* in : m_stage_ins) {
      std::string reason = "earlier stage of a multi-stage build (only the last stage is the image)";
      for (const auto& u : m_stage) {
        if (u.line == in->line) {
          reason += "; also: " + u.reason;
        }
      }
      unmapped.push_back({in->line, shown_instruction(util::redact_text(in->text)), reason});
    }
    m_stage.clear();
    m_stage_ins.clear();
    m = Mapping{};
    m_lock_commands.clear();
    m_vars.clear();
    m_refs.clear();
    files.clear();
    left_out.clear();
  }

  void finish() {
    for (auto& u : m_stage) {
      unmapped.push_back(u);
    }
    std::sort(unmapped.begin(), unmapped.end(), [](const Unmapped& a, const Unmapped& b) { return a.line < b.line; });
  }

  Mapping m;
  std::vector<Unmapped> unmapped;
  std::vector<std::string> m_lock_commands;
  std::set<std::string> m_used_build_args;                // the --build-arg names an ARG declared
  std::map<std::string, std::string> m_users;             // useradd -u UID [-g GID] NAME: NAME -> "UID:GID"
  std::vector<std::pair<std::string, std::string>> files; // requirements files of pip install NAME lines
  std::vector<std::string> left_out;                      // "LINE: command" a spec needs nothing for

private:
  // `shown`: what to show instead of the instruction (one that holds a secret).
  void skip(const std::string& reason, const std::string& shown = {}) {
    // The instruction is shown redacted: a URL in it may carry credentials.
    std::string text = shown.empty() ? util::redact_text(m_cur->text) : shown;
    m_stage.push_back({m_cur->line, shown_instruction(text), reason});
  }

  bool no_vars(const std::string& args) {
    bool vars = false;
    words(args, &vars);
    if (vars) {
      skip(unresolved());
    }
    return !vars;
  }

  // Why a line with a variable left in it is not mapped: the variable, and where a
  // value would come from.
  std::string unresolved() const {
    if (m_missing.empty()) {
      return "refers to a variable ($...), which a spec cannot expand: write the value";
    }
    std::string why = m_vars.count(m_missing) != 0 ? ", an ARG without a default (a --build-arg would give it)"
                      : m_global.count(m_missing) != 0
                          ? ", an ARG before the first FROM, which a stage sees only when it declares it again (ARG " +
                                m_missing + ")"
                          : ", which no ARG or ENV before it sets (the base's environment?)";
    return "refers to $" + m_missing + why + ": write the value";
  }

  // ARG NAME[=default] ...: into `scope` (a stage's ARG without a default takes the
  // global one of that name, as Dockerfile does).
  void arg(const std::string& args, Vars& scope, const Vars* global) {
    for (const auto& w : words(args)) {
      std::size_t eq = w.find('=');
      std::string name = w.substr(0, eq);
      if (name.empty()) {
        skip("cannot read '" + w + "' as NAME[=default]");
        return;
      }
      if (auto b = m_build_args.find(name); b != m_build_args.end()) {
        scope[name] = b->second; // --build-arg: over the default, and over the global's value
        m_used_build_args.insert(name);
      } else if (eq != std::string::npos) {
        std::string missing;
        std::string v = expand(w.substr(eq + 1), scope, &missing);
        scope[name] = missing.empty() ? std::optional<std::string>(v) : std::nullopt;
      } else if (global != nullptr && global->count(name) != 0) {
        scope[name] = global->at(name);
      } else if (scope.count(name) == 0) {
        scope[name] = std::nullopt;
      }
    }
  }

  void from(const std::string& args) {
    auto w = words(args);
    std::string platform;
    std::size_t i = 0;
    for (; i < w.size() && w[i].rfind("--", 0) == 0; ++i) {
      if (w[i].rfind("--platform=", 0) == 0) {
        platform = w[i].substr(11);
      }
    }
    if (i >= w.size()) {
      skip("FROM without an image");
      return;
    }
    std::string img = w[i];
    m.base = util::ascii_lower(img) == "scratch" ? "scratch" : img;
    if (!platform.empty() && platform.find('$') == std::string::npos) {
      m.platform = platform;
    }
  }

  void copy(const DockerInstruction& in) {
    bool add = in.keyword == "ADD";
    std::string rest = util::trim(in.args, " \t\r");
    std::string owner;
    std::string mode;
    std::string checksum;
    while (rest.rfind("--", 0) == 0) {
      std::size_t sp = rest.find_first_of(" \t");
      std::string flag = rest.substr(0, sp);
      rest = sp == std::string::npos ? "" : util::trim(rest.substr(sp), " \t\r");
      if (flag.rfind("--chown=", 0) == 0) {
        owner = flag.substr(8);
      } else if (flag.rfind("--chmod=", 0) == 0) {
        mode = flag.substr(8);
      } else if (flag == "--link") {
        continue;
      } else if (add && flag.rfind("--checksum=sha256:", 0) == 0) {
        checksum = util::ascii_lower(flag.substr(18));
      } else if (flag.rfind("--from=", 0) == 0) {
        std::string what = util::trim(rest, " \t\r");
        skip("COPY --from=" + flag.substr(7) + " copies what another stage built: build that stage outside " +
             "(docker build --target " + flag.substr(7) +
             ", or the stage's commands), put the files it leaves at the source paths (" + what +
             ") into the project, and copy them with a files rule of this spec");
        return;
      } else {
        skip("flag " + flag + " has no spec equivalent");
        return;
      }
    }
    // A heredoc source (COPY <<EOF /dest) is text in the Dockerfile, not a file in the
    // context: a spec copies files only.
    if (std::string first = rest.substr(0, rest.find('\n'));
        first.rfind("<<", 0) == 0 || first.find(" <<") != std::string::npos) {
      skip("a heredoc (" + in.keyword +
           " <<WORD) is text in the Dockerfile: write it to a file in the project and "
           "copy that");
      return;
    }
    std::vector<std::string> w;
    if (auto j = json_form(rest)) {
      w = *j;
    } else {
      bool vars = false;
      w = words(rest, &vars);
      if (vars) {
        skip(unresolved());
        return;
      }
    }
    if (w.size() < 2) {
      skip("needs a source and a destination");
      return;
    }
    std::string dest = join_path(m.workdir, w.back());
    w.pop_back();
    if (w.size() > 1 && dest.back() != '/') {
      dest += '/';
    }
    if (add && w.size() == 1 && is_remote_source(w[0])) {
      add_download(w[0], dest, checksum, owner, mode);
      return;
    }
    for (const auto& src : w) {
      if (is_remote_source(src)) {
        skip("ADD of several URLs: write one ADD --checksum=sha256:HEX URL DEST per file (each becomes a download "
             "rule with url: and sha256:)");
        return;
      }
      if (add && is_archive(src)) {
        skip("ADD unpacks a local archive: unpack it into the project and copy the directory");
        return;
      }
      if (src.find_first_of("*?[") != std::string::npos) {
        skip("wildcard sources: name the files or their directory");
        return;
      }
      if (src.find("..") != std::string::npos || (!src.empty() && src[0] == '/')) {
        skip("source outside the build context");
        return;
      }
    }
    bool numeric_owner = owner.find_first_not_of("0123456789:") == std::string::npos;
    if (!owner.empty() && !numeric_owner) {
      skip("--chown=" + owner +
           " names a user or group: the COPY is mapped without an owner; give numeric ids "
           "(owner: \"UID:GID\")");
    }
    Layer l;
    std::string base_name = dest;
    while (base_name.size() > 1 && base_name.back() == '/') {
      base_name.pop_back();
    }
    base_name = base_name.substr(base_name.find_last_of('/') + 1);
    l.name = layer_name(m, base_name.empty() ? "files" : base_name);
    for (const auto& src : w) {
      std::string from = src == "." || src == "./" ? "./" : src.rfind("./", 0) == 0 ? src.substr(2) : src;
      l.copies.push_back(local_copy(m_context + from, dest, numeric_owner ? owner : "", mode));
    }
    m.layers.push_back(l);
  }

  // ADD [--checksum=sha256:HEX] URL DEST: a download rule of a data layer (url: with its
  // sha256); without the checksum, the rule to write is the hint.
  void add_download(const std::string& url, const std::string& dest, const std::string& checksum,
                    const std::string& owner, const std::string& mode) {
    const std::string shown = util::redact_text(url);
    if (shown != url) {
      skip("ADD of a URL with credentials: put them in ~/.netrc and add the download as a rule with url: and sha256:");
      return;
    }
    const bool pinned = checksum.size() == 64 && util::is_lower_hex(checksum);
    if (!checksum.empty() && !pinned) {
      skip("ADD --checksum=" + checksum +
           " is not sha256:HEX (64 hex digits): drop it and let paddle-image lock "
           "--sources record the file's sha256");
      return;
    }
    if (!pinned) {
      need_sources_lock();
    }
    Layer l;
    l.data = true;
    std::string path = url.substr(0, url.find_first_of("?#"));
    std::string file = path.substr(path.rfind('/') + 1);
    l.name = layer_name(m, file.empty() ? "download" : file.substr(0, file.find('.')));
    bool numeric_owner = owner.find_first_not_of("0123456789:") == std::string::npos;
    Copy c;
    c.url = url;
    c.sha256 = pinned ? checksum : "";
    c.to = dest;
    c.owner = numeric_owner ? owner : "";
    c.mode = mode;
    l.copies.push_back(c);
    m.layers.push_back(l);
  }

  // `git clone URL [DIR] && cd DIR && git checkout COMMIT` (a full commit; `git -C DIR
  // checkout` too): a git source of a files layer at DIR. False when the RUN is anything else.
  bool git_clone(const std::vector<std::vector<std::string>>& segs, const std::string& cwd) {
    if (segs.empty() || segs[0].size() < 3 || segs[0][0] != "git" || segs[0][1] != "clone") {
      return false;
    }
    std::vector<std::string> pos;
    std::string branch;
    for (std::size_t i = 2; i < segs[0].size(); ++i) {
      const std::string& a = segs[0][i];
      if ((a == "-b" || a == "--branch") && i + 1 < segs[0].size()) {
        branch = segs[0][++i];
      } else if (a.rfind("--branch=", 0) == 0) {
        branch = a.substr(9);
      } else if (a == "--depth") {
        ++i;
      } else if (a.rfind("--recurse", 0) == 0 || a == "--recursive") {
        return false; // submodules: a git source exports the repository's own tree only
      } else if (a.rfind("-", 0) != 0) {
        pos.push_back(a);
      }
    }
    bool git_url = pos.size() == 1 || pos.size() == 2;
    git_url = git_url && (pos[0].rfind("https://", 0) == 0 || pos[0].rfind("http://", 0) == 0);
    if (!git_url || util::redact_text(pos[0]) != pos[0]) {
      return false;
    }
    std::string name = pos[0].substr(pos[0].find_last_of('/') + 1);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0) {
      name.resize(name.size() - 4);
    }
    std::string dir = join_path(cwd, pos.size() == 2 ? pos[1] : name);
    std::string commit;
    std::size_t i = 1;
    if (i < segs.size() && segs[i].size() == 2 && segs[i][0] == "cd" && join_path(cwd, segs[i][1]) == dir) {
      ++i;
      if (i < segs.size() && segs[i].size() == 3 && segs[i][0] == "git" && segs[i][1] == "checkout") {
        commit = segs[i][2];
        ++i;
      }
    } else if (i < segs.size() && segs[i].size() == 5 && segs[i][0] == "git" && segs[i][1] == "-C" &&
               join_path(cwd, segs[i][2]) == dir && segs[i][3] == "checkout") {
      commit = segs[i][4];
      ++i;
    }
    while (i < segs.size() && segs[i].size() == 3 && segs[i][0] == "rm" &&
           (segs[i][1] == "-rf" || segs[i][1] == "-fr") &&
           (join_path(cwd, segs[i][2]) == dir + "/.git" || segs[i][2] == ".git")) {
      ++i; // a git source has no .git
    }
    if (i != segs.size()) {
      return false;
    }
    bool full = commit.size() == 40 && util::is_lower_hex(commit);
    Layer l;
    l.name = layer_name(m, name.empty() ? "code" : name);
    Copy c;
    c.git = pos[0];
    if (full) {
      c.commit = commit;
    } else {
      c.ref = !commit.empty() ? commit : !branch.empty() ? branch : "HEAD";
      need_sources_lock();
    }
    c.to = dir;
    l.copies.push_back(c);
    m.layers.push_back(l);
    return true;
  }

  // The sources lock's command, once: a download or git ref is mapped without its pin.
  void need_sources_lock() {
    const std::string cmd = "paddle-image lock --sources --spec spec.yaml";
    if (std::find(m_lock_commands.begin(), m_lock_commands.end(), cmd) == m_lock_commands.end()) {
      m_lock_commands.push_back(cmd);
    }
  }

  // `wget [-q] [-O FILE | -P DIR] URL...` or `curl [-fsSL] (-o FILE | -O) URL`: the URLs
  // with the paths they are saved to. False for an option that changes what is fetched
  // or sent (a header, a POST, credentials), or output to stdout.
  static bool fetch_command(const std::vector<std::string>& seg, const std::string& cwd,
                            std::vector<std::pair<std::string, std::string>>& out) {
    const bool wget = seg[0] == "wget";
    std::string file;
    std::string dir = cwd;
    bool remote_name = wget;
    std::vector<std::string> urls;
    for (std::size_t i = 1; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      auto value = [&](const std::string& flag) -> std::optional<std::string> {
        if (a == flag && i + 1 < seg.size()) {
          return seg[++i];
        }
        if (flag.size() > 2 && a.rfind(flag + "=", 0) == 0) {
          return a.substr(flag.size() + 1);
        }
        return std::nullopt;
      };
      if (is_remote_source(a)) {
        urls.push_back(a);
      } else if (auto f = value(wget ? "-O" : "-o")) {
        file = *f;
      } else if (auto f2 = value(wget ? "--output-document" : "--output")) {
        file = *f2;
      } else if (auto d = wget ? value("-P") : std::nullopt) {
        dir = join_path(cwd, *d);
      } else if (auto d2 = wget ? value("--directory-prefix") : std::nullopt) {
        dir = join_path(cwd, *d2);
      } else if (value("--retry") || value("--tries") || value("-t") || value("--progress") || value("-C") ||
                 value("--connect-timeout") || value("--max-time") || value("--timeout") || value("-T")) {
        continue;
      } else if (!wget && (a == "-O" || a == "--remote-name")) {
        remote_name = true;
      } else if (!wget && a.size() > 1 && a[0] == '-' && a[1] != '-' &&
                 a.find_first_not_of("-fsSLkO#") == std::string::npos) {
        remote_name = remote_name || a.find('O') != std::string::npos; // -fsSLO
      } else if (a == "-q" || a == "-nv" || a == "--quiet" || a == "-c" || a == "--continue" ||
                 a == "--no-check-certificate" || a == "--show-progress" || a == "--fail" || a == "--silent" ||
                 a == "--show-error" || a == "--location" || a == "--insecure" || a == "--create-dirs" ||
                 a == "--progress-bar" || a == "--no-verbose") {
        continue;
      } else {
        return false;
      }
    }
    if (urls.empty() || (!file.empty() && urls.size() != 1) || (file.empty() && !remote_name) || file == "-") {
      return false;
    }
    for (const auto& u : urls) {
      std::string path = u.substr(0, u.find_first_of("?#"));
      std::string name = path.substr(path.rfind('/') + 1);
      if (file.empty() && name.empty()) {
        return false;
      }
      out.emplace_back(u, file.empty() ? join_path(dir, name) : join_path(cwd, file));
    }
    return true;
  }

  // `tar -x[z|j|J]f FILE [-C DIR] [--strip-components=N]` or `unzip [-q] [-o] FILE [-d
  // DIR]` of FILE: where it unpacks and how much it strips. False for anything else.
  static bool unpack_command(const std::vector<std::string>& seg, const std::string& cwd, std::string& file,
                             std::string& into, int& strip) {
    into = cwd;
    strip = 0;
    file.clear();
    bool extract = seg[0] == "unzip";
    for (std::size_t i = 1; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      if (seg[0] == "unzip") {
        if (a == "-d" && i + 1 < seg.size()) {
          into = join_path(cwd, seg[++i]);
        } else if (a == "-q" || a == "-o" || a == "-qo" || a == "-oq") {
          continue;
        } else if (a[0] != '-' && file.empty()) {
          file = join_path(cwd, a);
        } else {
          return false;
        }
        continue;
      }
      if ((a == "-C" || a == "--directory") && i + 1 < seg.size()) {
        into = join_path(cwd, seg[++i]);
      } else if (a.rfind("--strip-components=", 0) == 0) {
        std::string n = a.substr(19);
        if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos) {
          return false;
        }
        strip = std::stoi(n);
      } else if ((a == "-f" || a == "--file") && i + 1 < seg.size()) {
        file = join_path(cwd, seg[++i]);
      } else if (a == "--no-same-owner" || a == "-v" || a == "--gzip" || a == "-z" || a == "-x" || a == "--extract") {
        extract = extract || a == "-x" || a == "--extract";
      } else if (a.find_first_not_of("-xzjJvfoa") == std::string::npos && a.find('x') != std::string::npos) {
        extract = true; // -xzf, xvf: with f last, the file follows
        if (a.back() == 'f' && i + 1 < seg.size()) {
          file = join_path(cwd, seg[++i]);
        }
      } else {
        return false;
      }
    }
    return extract && !file.empty();
  }

  // A RUN of downloads: wget/curl of files, each then unpacked (tar, unzip) and removed,
  // with `mkdir`/`cd` around them: a data layer of download rules, pinned by the sources
  // lock. False (nothing mapped) when the RUN does anything else.
  bool download_run(const std::vector<std::vector<std::string>>& segs, std::string cwd) {
    struct Fetched {
      std::string url, path;
      bool extracted = false, removed = false;
      std::string into;
      int strip = 0;
    };
    std::vector<Fetched> got;
    auto find = [&](const std::string& path) -> Fetched* {
      for (auto& f : got) {
        if (f.path == path) {
          return &f;
        }
      }
      return nullptr;
    };
    for (const auto& seg : segs) {
      if (seg.empty()) {
        continue;
      }
      const std::string& c = seg[0];
      if (c == "cd" && seg.size() == 2) {
        cwd = join_path(cwd, seg[1]);
      } else if (c == "mkdir") {
        continue; // a rule makes the directories above what it lays out
      } else if (c == "wget" || c == "curl") {
        std::vector<std::pair<std::string, std::string>> out;
        if (!fetch_command(seg, cwd, out)) {
          return false;
        }
        for (auto& [u, p] : out) {
          Fetched f;
          f.url = u;
          f.path = p;
          got.push_back(f);
        }
      } else if (c == "tar" || c == "unzip") {
        Fetched unpack;
        if (!unpack_command(seg, cwd, unpack.path, unpack.into, unpack.strip)) {
          return false;
        }
        Fetched* f = find(unpack.path);
        if (f == nullptr || f->extracted) {
          return false;
        }
        f->extracted = true;
        f->into = unpack.into;
        f->strip = unpack.strip;
      } else if (c == "rm") {
        for (std::size_t i = 1; i < seg.size(); ++i) {
          if (seg[i][0] == '-') {
            continue;
          }
          Fetched* f = find(join_path(cwd, seg[i]));
          if (f == nullptr) {
            return false;
          }
          f->removed = true;
        }
      } else {
        return false;
      }
    }
    if (got.empty()) {
      return false;
    }
    for (const auto& f : got) {
      if (util::redact_text(f.url) != f.url) {
        skip("downloads a URL with credentials: put them in ~/.netrc and add the download as a rule with url:");
        return true;
      }
    }
    Layer l;
    l.data = true;
    std::string first = got[0].path.substr(got[0].path.rfind('/') + 1);
    l.name = layer_name(m, first.substr(0, first.find('.')).empty() ? "download" : first.substr(0, first.find('.')));
    for (const auto& f : got) {
      Copy c;
      c.url = f.url;
      if (f.extracted) {
        c.extract = true;
        c.strip_components = f.strip;
        c.to = f.into.empty() || f.into.back() == '/' ? f.into : f.into + "/";
        l.copies.push_back(c);
      }
      if (!f.removed || !f.extracted) { // the file itself stays in the image too
        Copy plain;
        plain.url = f.url;
        plain.to = f.path;
        l.copies.push_back(plain);
      }
    }
    m.layers.push_back(l);
    need_sources_lock();
    return true;
  }

  // `ln -s[f][n] TARGET LINK` (LINK ending in '/' or naming no file: LINK/basename of
  // TARGET is what ln makes when LINK ends in '/'): a symlink rule. nullopt for a hard
  // link or several targets.
  static std::optional<Copy> link_command(const std::vector<std::string>& seg, const std::string& cwd) {
    std::vector<std::string> pos;
    bool soft = false;
    for (std::size_t i = 1; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find_first_not_of("-sfnvT") == std::string::npos) {
        soft = soft || a.find('s') != std::string::npos;
      } else if (a == "--symbolic" || a == "--force" || a == "--no-dereference") {
        soft = soft || a == "--symbolic";
      } else if (a[0] == '-') {
        return std::nullopt;
      } else {
        pos.push_back(a);
      }
    }
    if (!soft || pos.size() != 2 || pos[0].empty() || pos[1].empty()) {
      return std::nullopt;
    }
    std::string link = join_path(cwd, pos[1]);
    if (link.back() == '/') {
      std::string t = pos[0];
      while (t.size() > 1 && t.back() == '/') {
        t.pop_back();
      }
      link += t.substr(t.find_last_of('/') + 1);
    }
    if (link == "/") {
      return std::nullopt;
    }
    Copy c;
    c.symlink = pos[0];
    c.to = link;
    return c;
  }

  // The files layer the Dockerfile's symlinks and directories go to (one, made by the
  // first of them: "links" or "dirs").
  Layer& links_layer(const char* name = "links") {
    for (auto& l : m.layers) {
      if (!l.copies.empty() && std::all_of(l.copies.begin(), l.copies.end(),
                                           [](const Copy& c) { return !c.symlink.empty() || c.directory; })) {
        return l;
      }
    }
    Layer l;
    l.name = layer_name(m, name);
    m.layers.push_back(l);
    return m.layers.back();
  }

  // `echo "export NAME=VALUE" >> ~/.bashrc` (or /root/.bashrc, /etc/bash.bashrc): NAME
  // and VALUE, for config.env. Nothing (nullopt) when the value is one the shell would
  // read otherwise than as written (quotes, blanks, escapes, expansions, several names).
  static std::optional<std::pair<std::string, std::string>> bashrc_export(const std::vector<std::string>& seg) {
    if (seg.size() < 4 || seg[0] != "echo" || seg[seg.size() - 2] != ">>") {
      return std::nullopt;
    }
    const std::string& file = seg.back();
    if (file != "~/.bashrc" && file != "/root/.bashrc" && file != "/etc/bash.bashrc") {
      return std::nullopt;
    }
    std::vector<std::string> said(seg.begin() + 1, seg.end() - 2);
    std::string text = util::join(said, " ");
    if (text.rfind("export ", 0) != 0) {
      return std::nullopt;
    }
    std::string kv = text.substr(7);
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 ||
        kv.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") < eq ||
        std::isdigit(static_cast<unsigned char>(kv[0])) != 0) {
      return std::nullopt;
    }
    std::string value = kv.substr(eq + 1);
    if (value.find_first_of(" \t\n\"'\\$`;&|<>(){}*?[]~#!") != std::string::npos) {
      return std::nullopt;
    }
    return std::make_pair(kv.substr(0, eq), value);
  }

  // `mkdir [-p] [-m MODE] DIR...`: a directory rule per DIR (its parents come with it, as
  // -p makes them; without -p a missing parent fails in Docker, which the build did not).
  // Nothing (nullopt) for an option it does not know or a mode that is not octal.
  static std::optional<std::vector<Copy>> mkdir_command(const std::vector<std::string>& seg, const std::string& cwd) {
    std::string mode;
    std::vector<Copy> out;
    bool options = true;
    for (std::size_t i = 1; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      if (options && a == "--") {
        options = false;
      } else if (options &&
                 (a == "-p" || a == "--parents" || a == "-v" || a == "--verbose" || a == "-pv" || a == "-vp")) {
        continue;
      } else if (options && (a == "-m" || a == "--mode") && i + 1 < seg.size()) {
        mode = seg[++i];
      } else if (options && (a.rfind("--mode=", 0) == 0 || (a.rfind("-m", 0) == 0 && a.size() > 2))) {
        mode = a.substr(a[1] == '-' ? 7 : 2);
      } else if (options && a.size() > 1 && a[0] == '-') {
        return std::nullopt;
      } else {
        Copy c;
        c.directory = true;
        c.to = join_path(cwd, a);
        while (c.to.size() > 1 && c.to.back() == '/') {
          c.to.pop_back();
        }
        if (c.to == "/") {
          continue;
        }
        out.push_back(c);
      }
    }
    if (!mode.empty() && (mode.size() > 4 || mode.find_first_not_of("01234567") != std::string::npos)) {
      return std::nullopt; // a symbolic mode (u+rwx)
    }
    if (out.empty()) {
      return std::nullopt;
    }
    for (auto& c : out) {
      c.mode = mode;
    }
    return out;
  }

  // `chmod MODE PATH...` of files this stage's copy rules put there, or of directories
  // its mkdir made (this RUN's `made` among them): the rules' mode. False (nothing
  // changed) when a path is not exactly a copied file's or a made directory's.
  bool chmod_of_copies(const std::vector<std::string>& seg, const std::string& cwd, std::vector<Copy>& made) {
    if (seg.size() < 3 || seg[1].rfind("-", 0) == 0) {
      return false;
    }
    std::string mode;
    if (seg[1] == "+x" || seg[1] == "a+x" || seg[1] == "755" || seg[1] == "0755") {
      mode = "0755";
    } else if (seg[1].find_first_not_of("01234567") == std::string::npos && seg[1].size() >= 3 && seg[1].size() <= 4) {
      mode = seg[1];
    } else {
      return false;
    }
    std::vector<Copy*> hits;
    for (std::size_t i = 2; i < seg.size(); ++i) {
      std::string path = join_path(cwd, seg[i]);
      std::string dir = path;
      while (dir.size() > 1 && dir.back() == '/') {
        dir.pop_back();
      }
      Copy* hit = nullptr;
      auto match = [&](Copy& c) {
        bool file = !c.from.empty() && c.from.back() != '/' && c.url.empty() && c.git.empty();
        std::string name = c.from.substr(c.from.rfind('/') + 1);
        std::string lands = !c.to.empty() && c.to.back() == '/' ? c.to + name : c.to;
        if ((file && lands == path) || (c.directory && c.to == dir)) {
          hit = &c;
        }
      };
      for (auto& l : m.layers) {
        std::for_each(l.copies.begin(), l.copies.end(), match);
      }
      std::for_each(made.begin(), made.end(), match);
      if (hit == nullptr) {
        return false;
      }
      hits.push_back(hit);
    }
    for (Copy* c : hits) {
      c->mode = mode;
    }
    return true;
  }

  // A variable that carries a secret (credentials in a URL, a signed URL's signature, or
  // a name that says so) is not copied: an image's environment is readable by everyone
  // who can pull it.
  static bool secret_env(const std::string& name, const std::string& value) {
    if (util::redact_text(value) != value) {
      return true;
    }
    std::string n = util::ascii_lower(name);
    for (const char* word :
         {"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key"}) {
      if (n.find(word) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  void add_env(const std::string& name, const std::string& value) {
    if (secret_env(name, value)) {
      skip("ENV " + name +
               " holds a secret, which would be readable in the image by anyone who pulls it: pass it "
               "at run time (a Kubernetes Secret), or for an index put the credentials in ~/.netrc "
               "where paddle-image runs",
           "ENV " + name + "=***");
      return;
    }
    m.env.emplace_back(name, value);
  }

  // ENV: each NAME=value lexed as Docker lexes it (lex_docker_words), with the variables
  // set before this instruction (one ENV's keys do not see each other). A value that
  // refers to a variable the Dockerfile never set (the base's $PATH) is written with the
  // reference, ${PATH}, which the build expands against the base's config as Docker
  // would; one that refers to an ARG without a default is listed, the other keys mapped.
  void env(const DockerInstruction& in) {
    const Vars before = m_vars;
    const DockerRefs refs_before = m_refs;
    auto put = [&](const std::string& name, const std::string& raw_value) {
      const LexedWord v = lex_docker_value(raw_value, before, refs_before, in.escape);
      if (!v.unsupported.empty() || !v.unset_arg.empty()) {
        skip(!v.unsupported.empty()
                 ? "ENV " + name + ": " + v.unsupported
                 : "ENV " + name + " refers to $" + v.unset_arg +
                       ", an ARG without a default (only a --build-arg would give it): give the ARG a default, or "
                       "write the value");
        m_vars[name] = std::nullopt;
        m_refs.erase(name);
        return;
      }
      if (v.refers) {
        // Its value is known only at build time: later references carry the reference on.
        m_vars.erase(name);
        m_refs[name] = v.spec;
      } else {
        m_vars[name] = v.value;
        m_refs.erase(name);
      }
      add_env(name, v.spec);
    };
    std::string rest = util::trim(in.args, " \t\r");
    auto first = words(rest.substr(0, rest.find_first_of(" \t")));
    if (!first.empty() && first[0].find('=') == std::string::npos) {
      // legacy form: ENV NAME value with spaces
      std::size_t sp = rest.find_first_of(" \t");
      put(first[0], sp == std::string::npos ? "" : util::trim(rest.substr(sp), " \t\r"));
      return;
    }
    for (const auto& kv : raw_words(rest)) {
      std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        skip("cannot read '" + kv + "' as NAME=value");
        return;
      }
      put(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }

  void label(const std::string& args) {
    auto w = words(args);
    for (const auto& kv : w) {
      std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        skip("cannot read '" + kv + "' as key=value");
        return;
      }
      set_label(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }

  // A key set again takes the later value, as in Docker (one key in the spec's mapping).
  void set_label(const std::string& key, const std::string& value) {
    auto it = std::find_if(m.labels.begin(), m.labels.end(), [&](const auto& kv) { return kv.first == key; });
    if (it != m.labels.end()) {
      it->second = value;
    } else {
      m.labels.emplace_back(key, value);
    }
  }

  // MAINTAINER (deprecated): Docker writes its text, unexpanded, to the config's author
  // field, which the OCI image spec keeps only for compatibility; the label it defines
  // for the same fact, org.opencontainers.image.authors, is what Docker's documentation
  // says to write instead. A LABEL of that key later in the stage overrides it, in order.
  void maintainer(const std::string& args) {
    std::string who = util::trim(args, " \t\r");
    if (who.empty()) {
      skip("MAINTAINER without a name (Docker refuses it: MAINTAINER requires exactly one argument)");
      return;
    }
    set_label("org.opencontainers.image.authors", who);
  }

  // A RUN's words as its commands: split at `&&` and `;` (also a word ending in ';', "libgl1;").
  static std::vector<std::vector<std::string>> segments(const std::vector<std::string>& w) {
    std::vector<std::vector<std::string>> segs(1);
    for (const auto& t : w) {
      if (t == "&&" || t == ";") {
        segs.emplace_back();
      } else if (t.size() > 1 && t.back() == ';') {
        segs.back().push_back(t.substr(0, t.size() - 1));
        segs.emplace_back();
      } else {
        segs.back().push_back(t);
      }
    }
    return segs;
  }

  // One `apt-get install` / `apt install` command: its packages, or false for a flag that
  // changes what apt trusts or does (--allow-unauthenticated, -t, a .deb path...).
  static bool apt_install(const std::vector<std::string>& seg, std::vector<std::string>& pkgs, bool& recommends) {
    bool no_recommends = false;
    for (std::size_t i = 2; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      if (a == "--no-install-recommends" || a == "-o" || a.rfind("-oAPT::Install-Recommends=", 0) == 0) {
        no_recommends = no_recommends || a == "--no-install-recommends" || a.find("=false") != std::string::npos ||
                        a.find("=0") != std::string::npos;
        if (a == "-o" && i + 1 < seg.size()) {
          const std::string& o = seg[++i];
          if (o.rfind("APT::Install-Recommends=", 0) != 0 && o.rfind("Dpkg::Options::=", 0) != 0) {
            return false;
          }
          no_recommends = no_recommends || o == "APT::Install-Recommends=false" || o == "APT::Install-Recommends=0";
        }
        continue;
      }
      if (a == "-y" || a == "--yes" || a == "-q" || a == "-qq" || a == "--quiet" || a == "--no-install-suggests" ||
          a == "--assume-yes" || a == "-yq" || a == "-qy" || a == "--fix-missing") {
        continue;
      }
      const std::string name = a.substr(0, a.find('='));
      bool name_ok = name.size() >= 2 && a[0] != '-' &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-") == std::string::npos &&
                     a.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-=:~ABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
                         std::string::npos;
      if (!name_ok && a.find('$') == std::string::npos) { // a variable is named as such by the caller
        return false;
      }
      pkgs.push_back(a);
    }
    recommends = recommends || !no_recommends;
    return true;
  }

  // RUN apt-get update && apt-get install -y PKGS && rm -rf /var/lib/apt/lists/*: the
  // packages go to the spec's debs layer. False when the RUN does anything else.
  bool apt_run(const std::vector<std::string>& w, bool vars) {
    std::vector<std::vector<std::string>> segs = segments(w);
    std::vector<std::string> pkgs;
    bool recommends = false;
    for (auto seg : segs) {
      while (!seg.empty() && seg[0].find('=') != std::string::npos && seg[0][0] != '-') {
        seg.erase(seg.begin()); // DEBIAN_FRONTEND=noninteractive
      }
      if (seg.empty()) {
        continue;
      }
      const bool apt = seg[0] == "apt-get" || seg[0] == "apt";
      if (apt && seg.size() >= 2 &&
          (seg[1] == "update" || seg[1] == "clean" || seg[1] == "autoclean" || seg[1] == "autoremove")) {
        continue; // the lock reads the indexes; a layer holds no apt cache
      }
      if (apt && seg.size() >= 2 && seg[1] == "install") {
        if (!apt_install(seg, pkgs, recommends)) {
          return false;
        }
        continue;
      }
      bool cleanup = seg[0] == "rm" && seg.size() >= 2;
      for (std::size_t i = 1; cleanup && i < seg.size(); ++i) {
        const std::string& a = seg[i];
        cleanup = a == "-rf" || a == "-fr" || a == "-r" || a == "-f" || a.rfind("/var/lib/apt/lists", 0) == 0 ||
                  a.rfind("/var/cache/apt", 0) == 0 || a.rfind("/tmp/", 0) == 0;
      }
      if (!cleanup) {
        return false;
      }
    }
    if (pkgs.empty()) {
      return false;
    }
    if (vars) {
      skip("installs Debian packages named through a variable ($...), which a spec cannot expand: write the names "
           "in the spec's debs layer");
      return true;
    }
    Layer* debs = nullptr;
    for (auto& l : m.layers) {
      if (l.debs) {
        debs = &l;
      }
    }
    if (debs == nullptr) {
      Layer l;
      l.debs = true;
      l.name = layer_name(m, "system");
      m.layers.insert(m.layers.begin(), l); // system libraries change least: the first layer
      debs = &m.layers.front();
      m_lock_commands.push_back("paddle-image lock --spec spec.yaml --layer " + debs->name);
    }
    for (auto& p : pkgs) {
      if (std::find(debs->packages.begin(), debs->packages.end(), p) == debs->packages.end()) {
        debs->packages.push_back(p);
      }
    }
    debs->recommends = debs->recommends || recommends;
    return true;
  }

  // `useradd [-u UID] [-g GID] ... NAME`: its ids kept for a USER NAME after it (the
  // spec's user by number: the base's /etc/passwd lacks the name). The hint.
  std::string user_added(const std::vector<std::string>& seg) {
    std::string uid;
    std::string gid;
    std::string name;
    for (std::size_t i = 1; i < seg.size(); ++i) {
      const std::string& a = seg[i];
      bool takes = a == "-s" || a == "-d" || a == "-c" || a == "-G" || a == "--shell" || a == "--home-dir" ||
                   a == "--comment" || a == "--groups" || a == "--gecos" || a == "--ingroup";
      if ((a == "-u" || a == "--uid") && i + 1 < seg.size()) {
        uid = seg[++i];
      } else if ((a == "-g" || a == "--gid") && i + 1 < seg.size()) {
        gid = seg[++i];
      } else if (takes) {
        ++i;
      } else if (a[0] != '-') {
        name = a;
      }
    }
    const bool numeric = !uid.empty() && uid.find_first_not_of("0123456789") == std::string::npos &&
                         gid.find_first_not_of("0123456789") == std::string::npos;
    if (name.empty() || !numeric) {
      return command_hint(seg);
    }
    const std::string ids = uid + ":" + (gid.empty() ? uid : gid);
    m_users[name] = ids;
    return "adds user " + name + " (" + ids + "), which the base does not have: a spec writes no /etc/passwd; a USER " +
           name + " after this becomes config.user \"" + ids + "\" (files copied with --chown=" + ids +
           " keep those ids); for the name and a home directory use a base "
           "that has the user";
  }

  // A hint specific to a command a spec cannot run, by its name.
  static std::string command_hint(const std::vector<std::string>& seg) {
    const std::string& c = seg[0];
    if (c == "wget" || c == "curl") {
      std::string url;
      for (const auto& a : seg) {
        if (is_remote_source(a) && url.empty()) {
          url = util::redact_text(a);
        }
      }
      return "downloads at build time, in a form not mapped (stdout, headers, a pipe): make it a download rule of "
             "a data layer, {url: " +
             (url.empty() ? std::string("URL") : url) +
             ", to: DEST} (extract: true, strip_components and include for an archive that tar or unzip unpacks "
             "after it), and run paddle-image lock --sources to pin its sha256";
    }
    if (c == "git") {
      std::string url;
      std::string ref = "BRANCH-OR-TAG";
      for (std::size_t i = 2; i < seg.size() && seg[1] == "clone"; ++i) {
        if ((seg[i - 1] == "-b" || seg[i - 1] == "--branch")) {
          ref = seg[i];
        } else if (seg[i].rfind("-", 0) != 0 && url.empty() && seg[i - 1] != "--depth") {
          url = util::redact_text(seg[i]);
        }
      }
      return "clones code at build time, with more than a checkout after it (or submodules, which a git source "
             "does not export): make it a git source of a files layer, {git: " +
             (url.empty() ? std::string("URL") : url) + ", ref: " + ref +
             ", to: DEST}, pinned by paddle-image lock --sources, and do the rest outside";
    }
    if (c == "tar" || c == "unzip") {
      return "unpacks an archive at build time: unpack it into the project and copy the directory";
    }
    if (c == "mkdir") {
      return "creates a directory with an option a directory rule does not take (a symbolic mode, -Z): write "
             "{directory: PATH, mode: \"0755\"} in a files layer";
    }
    if (c == "chmod" || c == "chown") {
      return "changes modes or owners: give the copy rule that ships the file `mode:` or `owner:`";
    }
    if (c == "ln") {
      return "makes a link: put the symlink in the project and copy it (copy rules keep symlinks)";
    }
    if (c == "useradd" || c == "adduser" || c == "groupadd" || c == "addgroup") {
      return "adds a user: a spec writes no /etc/passwd; use a base that has the user and set config.user to UID:GID";
    }
    if (c == "echo" && seg.size() >= 4 && seg[2] == ">>" && seg[1].rfind("export ", 0) == 0 &&
        seg[3].find("bashrc") != std::string::npos && seg[1].find('=') != std::string::npos) {
      const std::string kv = seg[1].substr(7);
      const std::string name = kv.substr(0, kv.find('='));
      return "sets " + name + " for interactive shells (.bashrc): put it in config.env (" + name + ": " +
             kv.substr(kv.find('=') + 1) + "), which every process of the container sees";
    }
    if (c == "echo" || c == "sed" || c == "printf" || c == "cat") {
      return "writes or edits a file in the image: ship the finished file in a files layer";
    }
    if (c == "locale-gen" || c == "update-locale" || c == "localedef") {
      return "generates locales: set LANG=C.UTF-8 in config.env (every Debian and Ubuntu base has that locale)";
    }
    if (c == "make" || c == "cmake" || c == "ninja" || c == "gcc" || c == "g++" || c == "go" || c == "cargo" ||
        c == "npm" || c == "yarn" || c == "nvcc") {
      return "compiles or builds at build time: build it outside (or in CI) and copy what it makes with a files rule";
    }
    if (c == "conda" || c == "mamba") {
      return "installs with conda: a spec installs wheels; export the environment's pip packages to a "
             "requirements file for a wheels layer";
    }
    if (c == "python" || c == "python3" || c.rfind("python3.", 0) == 0 || c == "bash" || c == "sh" ||
        c.rfind("./", 0) == 0) {
      return "runs a program at build time: run it outside and copy what it makes";
    }
    return "RUN executes a command at build time; paddle-image runs nothing (put its result in the base or a layer)";
  }

  // Where the pip of a command starts: after `pip`, `pip3`, `pip3.X`, `python[3[.X]] -m
  // pip`; npos when the command is not pip's.
  static std::size_t pip_start(const std::vector<std::string>& seg) {
    auto python = [](const std::string& c) {
      return c == "python" || c == "python3" || (c.rfind("python3.", 0) == 0 && c.size() > 8) ||
             c.rfind("/usr/bin/python", 0) == 0 || c.rfind("/usr/local/bin/python", 0) == 0;
    };
    const std::string& c = seg[0];
    if (c == "pip" || c == "pip3" || (c.rfind("pip3.", 0) == 0 && c.size() > 5) ||
        c.rfind("/usr/local/bin/pip", 0) == 0 || c.rfind("/usr/bin/pip", 0) == 0) {
      return 1;
    }
    if (python(c) && seg.size() >= 3 && seg[1] == "-m" && seg[2] == "pip") {
      return 3;
    }
    return std::string::npos;
  }

  struct PipInstall {
    std::vector<std::string> reqs;  // -r FILE, as image paths
    std::vector<std::string> names; // NAME[==VERSION] arguments
    std::vector<std::string> indexes, find_links;
    bool upgrade = false;
  };

  // Why a `pip install` argument is not one requirement, the line of a requirements file
  // it becomes: a line break or another control byte (a second line: an option such as
  // --index-url, smuggled in a quoted argument), a comment, or an option after it
  // (a blank, then '#' or '-': pip reads those as a comment and as per-requirement
  // options); then the caller's PEP 508 check.
  std::optional<std::string> not_one_requirement(const std::string& a) const {
    auto shown = [&] {
      std::string t;
      for (unsigned char ch : a.substr(0, 80)) {
        t += ch < 0x20 || ch == 0x7f ? '?' : static_cast<char>(ch);
      }
      return "`" + t + (a.size() > 80 ? "...`" : "`");
    };
    const std::string fix = ": give pip install one requirement per argument (NAME, NAME==VERSION, NAME>=LOW, "
                            "NAME[EXTRA], NAME; MARKER), options as arguments of their own";
    for (std::size_t k = 0; k < a.size(); ++k) {
      auto ch = static_cast<unsigned char>(a[k]);
      if (ch < 0x20 || ch == 0x7f) {
        return shown() +
               " holds a control character (a line break would start another line of the requirements "
               "file)" +
               fix;
      }
      if (ch == ' ' && k + 1 < a.size() && (a[k + 1] == '#' || a[k + 1] == '-')) { // a tab: a control byte
        return shown() + " is more than a requirement (pip reads the part from `" + std::string(1, a[k + 1]) +
               "` on as " + (a[k + 1] == '#' ? "a comment" : "options") + ")" + fix;
      }
    }
    if (a.empty() || a[0] == '#') {
      return shown() + " is not a requirement" + fix;
    }
    if (m_requirement_error) {
      if (auto why = m_requirement_error(a)) {
        return shown() + " is not a requirement (PEP 508): " + *why + fix;
      }
    }
    return std::nullopt;
  }

  // `pip install ...` from w[i] on; an error message for what it cannot map.
  std::optional<std::string> parse_pip_install(const std::vector<std::string>& w, std::size_t i, const std::string& cwd,
                                               PipInstall& p) {
    for (; i < w.size(); ++i) {
      const std::string& a = w[i];
      auto value = [&](const std::string& flag) -> std::optional<std::string> {
        if (a == flag && i + 1 < w.size()) {
          return w[++i];
        }
        if (flag.rfind("--", 0) == 0 && a.rfind(flag + "=", 0) == 0) {
          return a.substr(flag.size() + 1);
        }
        if (flag.size() == 2 && a.size() > 2 && a.rfind(flag, 0) == 0) {
          return a.substr(2); // -rrequirements.txt
        }
        return std::nullopt;
      };
      if (auto v = value("-r")) {
        p.reqs.push_back(join_path(cwd, *v));
      } else if (auto v2 = value("--requirement")) {
        p.reqs.push_back(join_path(cwd, *v2));
      } else if (auto v3 = value("-i")) {
        p.indexes.insert(p.indexes.begin(), *v3);
      } else if (auto v4 = value("--index-url")) {
        p.indexes.insert(p.indexes.begin(), *v4);
      } else if (auto v5 = value("--extra-index-url")) {
        p.indexes.push_back(*v5);
      } else if (auto v6 = value("-f")) {
        p.find_links.push_back(*v6);
      } else if (auto v7 = value("--find-links")) {
        p.find_links.push_back(*v7);
      } else if (auto v8 = value("--trusted-host")) {
        continue; // TLS is the build host's: --insecure-registry / --ca-file
      } else if (a == "--upgrade" || a == "-U") {
        p.upgrade = true;
      } else if (a == "--no-cache-dir" || a == "-q" || a == "--quiet" || a == "-qq" ||
                 a == "--disable-pip-version-check" || a == "--no-compile" || a == "--user" ||
                 a == "--break-system-packages" || a == "--ignore-installed" || a == "--no-warn-script-location" ||
                 a == "--root-user-action=ignore" || a == "--progress-bar=off") {
        continue;
      } else if (a == "-e" || a == "--editable" || a == "." || a.rfind("./", 0) == 0 || a.rfind("/", 0) == 0 ||
                 a.rfind("git+", 0) == 0) {
        return "`" + a +
               "` installs a local project or a VCS checkout: build its wheel outside (pip wheel) and "
               "install the wheel with a wheels layer (dir:)";
      } else if (a.rfind("http://", 0) == 0 || a.rfind("https://", 0) == 0) {
        return "`" + a +
               "` installs a wheel by URL: download it into a directory of the project and install it with a "
               "wheels layer (dir:), or name the project and its index";
      } else if (!a.empty() && a[0] == '-') {
        return "`" + a + "` in a pip install has no spec equivalent";
      } else if (auto why = not_one_requirement(a)) {
        return *why;
      } else {
        p.names.push_back(a);
      }
    }
    return std::nullopt;
  }

  // Where an image path came from: the context path the last COPY that wrote there
  // copied it from (a file copied as or into a destination, or a file inside a copied
  // directory); nullopt when no COPY before wrote it, or when a download or git source
  // did (then *remote names it). Paths as the spec's copy rules name them (the context
  // prefix included).
  std::optional<std::string> copied_from(const std::string& image_path, const Copy** remote = nullptr) const {
    auto tidy = [](std::string p) {
      for (std::size_t at; (at = p.find("/./")) != std::string::npos;) {
        p.erase(at, 2);
      }
      for (std::size_t at; (at = p.find("//")) != std::string::npos;) {
        p.erase(at, 1);
      }
      return p.rfind("./", 0) == 0 && p.size() > 2 ? p.substr(2) : p;
    };
    for (auto l = m.layers.rbegin(); l != m.layers.rend(); ++l) {
      for (auto c = l->copies.rbegin(); c != l->copies.rend(); ++c) {
        if (c->from.empty()) { // a download or git source: not a file of the project
          std::string under = c->to.empty() || c->to.back() == '/' ? c->to : c->to + "/";
          if (image_path == c->to || image_path.rfind(under, 0) == 0) {
            if (remote != nullptr) {
              *remote = &*c;
            }
            return std::nullopt;
          }
          continue;
        }
        const bool into = !c->to.empty() && c->to.back() == '/';
        const bool dir_src = !c->from.empty() && c->from.back() == '/';
        if (!into && !dir_src && c->to == image_path) {
          return tidy(c->from); // COPY req.txt /app/req.txt
        }
        const std::string prefix = into ? c->to : c->to + "/";
        if (image_path.rfind(prefix, 0) != 0) {
          continue;
        }
        const std::string rel = image_path.substr(prefix.size());
        std::string trimmed = c->from;
        while (trimmed.size() > 1 && trimmed.back() == '/') {
          trimmed.pop_back();
        }
        const std::string leaf = trimmed.substr(trimmed.find_last_of('/') + 1);
        if (into && !dir_src && rel == leaf) {
          return tidy(c->from); // COPY req.txt /app/
        }
        if (into && !dir_src && leaf.find('.') != std::string::npos && leaf.find('.') != 0) {
          continue; // COPY requirements.txt extra.txt /app/: a file, not the directory of /app/requirements.txt
        }
        return tidy(trimmed + "/" + rel); // a directory's contents: COPY . /app/, COPY src /app/src
      }
    }
    return std::nullopt;
  }

  // The -r files of a pip install as the spec's paths (the files the lock reads), each
  // followed back through the COPY that put it there; false (and why, listed) when one
  // does not come from the project.
  bool requirement_sources(const PipInstall& p, std::vector<std::string>& sources) {
    for (const auto& r : p.reqs) {
      const Copy* remote = nullptr;
      auto src = copied_from(r, &remote);
      if (!src && remote != nullptr) {
        skip("-r " + r + ": the file comes from " + (remote->git.empty() ? remote->url : remote->git) +
             ", not from the project: a lock is made from a file here; put a copy of it in the project and map "
             "it to a wheels layer");
        return false;
      }
      if (!src) {
        skip("-r " + r +
             ": no COPY before this RUN puts a file there; copy the requirements file from the "
             "project first (a files layer), then this maps to a wheels layer");
        return false;
      }
      sources.push_back(*src);
    }
    return true;
  }

  // A wheels layer for one pip install: its one -r file, or a requirements input beside
  // the spec holding its named packages and -r files, which `lock` resolves.
  void add_pip_layer(PipInstall& p) {
    Layer l;
    l.wheels = true;
    l.indexes = p.indexes;
    l.find_links = p.find_links;
    std::vector<std::string> with_credentials;
    for (auto* urls : {&l.indexes, &l.find_links}) {
      for (auto& u : *urls) {
        if (auto parsed = util::parse_url(u); parsed && !parsed->userinfo.empty()) {
          with_credentials.push_back(parsed->authority());
          u = util::without_userinfo(u);
        }
      }
    }
    if (!with_credentials.empty()) {
      skip("the credentials in the URL for " + util::join(with_credentials, ", ") +
           " are not copied into the spec: put them in ~/.netrc (machine HOST login USER password PASS) or "
           "PIP_INDEX_URL where paddle-image runs");
    }
    std::vector<std::string> sources;
    if (!requirement_sources(p, sources)) {
      return;
    }
    l.name = layer_name(m, "deps");
    std::string req;
    const bool generated = sources.size() != 1 || !p.names.empty();
    if (!generated) {
      req = sources[0]; // the project's own file is the lock's input
    } else {
      // Named packages (pinned or not, ranges and extras as pip reads them) and the -r
      // files, in one requirements input beside the spec: `lock` resolves it for the base.
      req = "requirements-" + l.name + ".txt";
      std::string text = "# From " + m_file + ":" + std::to_string(m_cur->line) +
                         " (pip install). paddle-image lock resolves these for the base image (names, ranges,\n"
                         "# extras and markers as pip reads them) into " +
                         req.substr(0, req.size() - 4) + ".lock; edit this file, not the lock.\n";
      for (const auto& s : sources) {
        text += "-r " + s + "\n";
      }
      for (const auto& n : p.names) {
        text += n + "\n";
      }
      files.emplace_back(req, text);
    }
    if (p.upgrade) {
      left_out.push_back(std::to_string(m_cur->line) +
                         ": pip's --upgrade (the lock takes the newest versions that fit; the base's copy where it "
                         "already meets a requirement)");
    }
    for (const auto& earlier : m.layers) {
      if (earlier.wheels && earlier.lock == req + ".lock") {
        skip("installs " + req + " again: wheels layer " + earlier.name +
             " already installs it (one lock per requirements file)");
        return;
      }
    }
    l.lock = (generated ? req.substr(0, req.size() - 4) : req) + ".lock";
    m.layers.push_back(l);
    m_lock_commands.push_back("paddle-image lock " + req + " -o " + l.lock + " --spec spec.yaml --layer " + l.name);
  }

  // One command of a RUN that is neither of the simple ones: pip (install: `pips`; a
  // self-upgrade or cache purge: `harmless`). False once skip() has said why the RUN
  // does not map.
  bool pip_segment(const std::vector<std::string>& seg, const std::string& cwd, std::vector<PipInstall>& pips,
                   std::vector<std::string>& harmless) {
    std::size_t i = pip_start(seg);
    if (i == std::string::npos) {
      skip(seg[0] == "useradd" || seg[0] == "adduser" ? user_added(seg) : command_hint(seg));
      return false;
    }
    if (i < seg.size() && seg[i] == "cache") {
      harmless.push_back(util::join(seg, " "));
      return true;
    }
    if (i >= seg.size() || seg[i] != "install") {
      skip("`pip " + (i < seg.size() ? seg[i] : std::string()) + "` has no spec equivalent (only pip install maps)");
      return false;
    }
    PipInstall p;
    if (auto why = parse_pip_install(seg, i + 1, cwd, p)) {
      skip(*why);
      return false;
    }
    bool self_upgrade =
        p.reqs.empty() && !p.names.empty() && std::all_of(p.names.begin(), p.names.end(), [](const std::string& n) {
          std::string base = util::ascii_lower(n.substr(0, n.find_first_of("=<>!~")));
          return base == "pip" || base == "setuptools" || base == "wheel";
        });
    if (self_upgrade) {
      harmless.push_back(util::join(seg, " ") + " (the tools that install, which the image does not need)");
      return true;
    }
    if (p.reqs.empty() && p.names.empty()) {
      skip("pip install with nothing to install");
      return false;
    }
    pips.push_back(p);
    return true;
  }

  // RUN: its commands (split at && and ;) mapped when each is one a spec expresses (pip
  // install: a wheels layer; apt-get install: the debs layer; ln -s: symlink rules;
  // mkdir: directory rules; chmod of what those or copy rules made: their mode) or needs
  // nothing for (apt-get update and clean, rm, cd, a pip self-upgrade, pip cache purge).
  void run(const std::string& args) {
    if (auto j = json_form(args)) {
      skip("RUN executes a command at build time; paddle-image runs nothing (put its result in the base or a layer)");
      return;
    }
    bool vars = false;
    auto w = words(args, &vars);
    if (apt_run(w, vars)) {
      return;
    }
    std::vector<std::vector<std::string>> segs = segments(w);
    std::string cwd = m.workdir.empty() ? "/" : m.workdir;
    if (!vars && (git_clone(segs, cwd) || download_run(segs, cwd))) {
      return;
    }
    std::vector<PipInstall> pips;
    std::vector<std::string> harmless;
    std::vector<std::string> chmods;                          // mapped into the copy rules' mode
    std::vector<Copy> links;                                  // ln -s: symlink rules, added once the whole RUN maps
    std::vector<Copy> dirs;                                   // mkdir: directory rules, likewise
    std::vector<std::pair<std::string, std::string>> exports; // echo "export X=V" >> ~/.bashrc: config.env
    for (auto seg : segs) {
      while (!seg.empty() && seg[0].find('=') != std::string::npos && seg[0][0] != '-') {
        seg.erase(seg.begin());
      }
      if (seg.empty()) {
        continue;
      }
      if (seg[0] == "cd" && seg.size() == 2) {
        cwd = join_path(cwd, seg[1]);
        continue;
      }
      if (seg[0] == "rm" || (seg[0] == "apt-get" && seg.size() >= 2 && (seg[1] == "clean" || seg[1] == "update"))) {
        harmless.push_back(util::join(seg, " "));
        continue;
      }
      if (seg[0] == "ln" && !vars) {
        if (auto link = link_command(seg, cwd)) {
          links.push_back(*link);
          continue;
        }
      }
      if (auto kv = vars ? std::nullopt : bashrc_export(seg)) {
        exports.push_back(*kv);
        continue;
      }
      if (seg[0] == "ulimit") {
        harmless.push_back(util::join(seg, " ") +
                           " (a limit of this RUN's own shell, which leaves nothing in the image)");
        continue;
      }
      if (seg[0] == "mkdir" && !vars) {
        if (auto made = mkdir_command(seg, cwd)) {
          dirs.insert(dirs.end(), made->begin(), made->end());
          continue;
        }
      }
      if (seg[0] == "chmod" && !vars && chmod_of_copies(seg, cwd, dirs)) {
        chmods.push_back(util::join(seg, " "));
        continue;
      }
      if (!pip_segment(seg, cwd, pips, harmless)) {
        return;
      }
    }
    if (vars) {
      skip(unresolved());
      return;
    }
    if (!links.empty()) {
      Layer& ll = links_layer();
      ll.copies.insert(ll.copies.end(), links.begin(), links.end());
    }
    if (!dirs.empty()) {
      Layer& dl = links_layer("dirs");
      dl.copies.insert(dl.copies.end(), dirs.begin(), dirs.end());
    }
    for (const auto& [name, value] : exports) {
      add_env(name, value);
      left_out.push_back(std::to_string(m_cur->line) + ": echo \"export " + name + "=...\" >> .bashrc: " + name +
                         " is in config.env, which every process of the container sees, not only interactive shells");
    }
    if (pips.empty() && chmods.empty() && harmless.empty() && links.empty() && dirs.empty() && exports.empty()) {
      skip("RUN executes a command at build time; paddle-image runs nothing");
      return;
    }
    for (auto& p : pips) {
      add_pip_layer(p);
    }
    for (auto h : harmless) {
      std::replace(h.begin(), h.end(), '\n', ' ');
      left_out.push_back(std::to_string(m_cur->line) + ": " + util::redact_text(h));
    }
  }

  std::string m_context;
  std::string m_file;
  std::function<std::optional<std::string>(const std::string&)> m_requirement_error;
  std::map<std::string, std::string> m_build_args; // --build-arg
  Vars m_global;                                   // the ARGs before the first FROM
  Vars m_vars;                                     // the stage's ARGs and ENVs, as set so far
  DockerRefs m_refs;                               // its ENVs whose values refer to the base's variables (spec form)
  bool m_seen_from = false;
  std::string m_missing; // the current instruction's first variable without a value
  const DockerInstruction* m_cur = nullptr;
  std::vector<Unmapped> m_stage;
  std::vector<const DockerInstruction*> m_stage_ins;
};

std::string q(const std::string& s) {
  return yaml_quote(s);
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "") + q(v[i]);
  }
  return out + "]";
}

// The apt repository of the base's distribution, as far as the FROM tells it: Debian's
// for a Debian base, else Ubuntu's (Paddle's images are Ubuntu's), with the release the
// tag names (22.04 when it names none, which the comment asks to check).
std::string debs_yaml(const std::string& base, const Layer& l) {
  struct Distro {
    const char* marker;
    const char* url;
    const char* suite;
    const char* components;
    const char* keyring;
  };
  static const Distro k_distros[] = {
      {"bookworm", "http://deb.debian.org/debian", "bookworm", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"bullseye", "http://deb.debian.org/debian", "bullseye", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"debian", "http://deb.debian.org/debian", "bookworm", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"20.04", "http://archive.ubuntu.com/ubuntu", "focal", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
      {"24.04", "http://archive.ubuntu.com/ubuntu", "noble", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
      {"22.04", "http://archive.ubuntu.com/ubuntu", "jammy", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
  };
  const Distro* d = &k_distros[std::size(k_distros) - 1];
  bool named = false;
  for (const auto& x : k_distros) {
    if (base.find(x.marker) != std::string::npos) {
      d = &x;
      named = true;
      break;
    }
  }
  std::string y =
      "    # The base's distribution's repository" +
      std::string(named ? "" : " (assumed: Ubuntu 22.04; check the base's /etc/os-release)") +
      (l.recommends ? "; apt-get installed Recommends too, a debs layer does not: add those you need" : "") +
      "\n    debs:\n      packages: " + list(l.packages) + "\n      repositories:\n        - url: " + d->url +
      "\n          suite: " + d->suite + "\n          components: " + d->components +
      "\n          keyring: " + d->keyring + "\n      lock: debs.lock\n";
  return y;
}

// One copy rule of a files or data layer, as the spec writes it.
std::string copy_yaml(const Copy& c) {
  std::string y;
  if (!c.symlink.empty()) {
    y += "      - symlink: " + q(c.symlink) + "\n        to: " + q(c.to) + "\n";
  } else if (c.directory) {
    y += "      - directory: " + q(c.to) + "\n";
  } else if (!c.git.empty()) {
    y += "      - git: " + q(c.git) + "\n" +
         (c.commit.empty() ? "        ref: " + q(c.ref) + " # pinned to its commit by paddle-image lock --sources\n"
                           : "        commit: " + q(c.commit) + "\n") +
         "        to: " + q(c.to) + "\n";
  } else if (!c.url.empty()) {
    y += "      - url: " + q(c.url) + "\n" +
         (c.sha256.empty() ? "        # sha256: pinned by paddle-image lock --sources\n"
                           : "        sha256: " + q(c.sha256) + "\n");
    if (c.extract) {
      y += "        extract: true\n";
    }
    if (c.strip_components > 0) {
      y += "        strip_components: " + std::to_string(c.strip_components) + "\n";
    }
    y += "        to: " + q(c.to) + "\n";
  } else {
    y += "      - from: " + q(c.from) + "\n        to: " + q(c.to) + "\n";
  }
  if (!c.owner.empty()) {
    y += "        owner: " + q(c.owner) + "\n";
  }
  if (c.from.rfind("../", 0) == 0) {
    y += "        allow_outside: true # the build context lies outside the spec's directory\n";
  }
  if (!c.mode.empty()) {
    y += "        mode: " + q(c.mode.size() < 4 ? std::string(4 - c.mode.size(), '0') + c.mode : c.mode) + "\n";
  }
  return y;
}

std::string emit(const Mapping& m, const std::vector<Unmapped>& unmapped, const std::string& file_name,
                 const std::vector<std::string>& commands, const std::vector<std::string>& left_out) {
  std::string y = "# Made by `paddle-image init --from-dockerfile " + file_name + "`. Reference: docs/spec.md.\n";
  if (!unmapped.empty()) {
    y += "# Not mapped (no spec equivalent; see docs/templates.md):\n";
    for (const auto& u : unmapped) {
      std::string t = u.instruction;
      std::replace(t.begin(), t.end(), '\n', ' ');
      y += "#   " + file_name + ":" + std::to_string(u.line) + ": " + t + "\n#     " + u.reason + "\n";
    }
  }
  if (!left_out.empty()) {
    y += "# Left out, as a spec needs nothing for them:\n";
    for (const auto& l : left_out) {
      y += "#   " + file_name + ":" + l + "\n";
    }
  }
  for (const auto& c : commands) {
    y += (c.rfind("paddle-image lock --sources", 0) == 0
              ? "# Downloads and git refs are pinned (sha256, commit) in the sources lock; write it with\n#   "
          : c.rfind("paddle-image lock --spec ", 0) == 0
              ? "# The debs layer installs from a lock; write it with\n#   "
              : "# A requirements file is not a lock; write the lock with\n#   ") +
         c + "\n";
  }
  y += "base: " + q(m.base) + "\n";
  if (!m.platform.empty()) {
    y += "platform: " + q(m.platform) + "\n";
  }
  y += m.layers.empty() ? "layers: []\n" : "layers:\n";
  for (const auto& l : m.layers) {
    y += "  - name: " + q(l.name) + "\n";
    if (l.debs) {
      y += debs_yaml(m.base, l);
      continue;
    }
    if (l.wheels) {
      y += "    wheels:\n      lock: " + q(l.lock) + "\n";
      if (l.indexes.size() == 1) {
        y += "      index: " + q(l.indexes[0]) + "\n";
      } else if (!l.indexes.empty()) {
        y += "      index: " + list(l.indexes) + "\n";
      }
      if (!l.find_links.empty()) {
        y += "      find_links: " + list(l.find_links) + "\n";
      }
      continue;
    }
    y += l.data ? "    data:\n" : "    files:\n";
    for (const auto& c : l.copies) {
      y += copy_yaml(c);
    }
  }
  std::string cfg;
  if (m.entrypoint) {
    cfg += "  entrypoint: " + list(*m.entrypoint) + "\n";
  }
  if (m.cmd) {
    cfg += "  cmd: " + list(*m.cmd) + "\n";
  }
  if (!m.env.empty()) {
    cfg += "  env:\n";
    for (const auto& [k, v] : m.env) {
      cfg += "    " + q(k) + ": " + q(v) + "\n"; // spec form: a literal '$' is "$$", the base's ${NAME}
    }
  }
  if (!m.workdir.empty()) {
    cfg += "  workdir: " + q(m.workdir) + "\n";
  }
  if (!m.user.empty()) {
    cfg += "  user: " + q(m.user) + "\n";
  }
  if (!m.labels.empty()) {
    cfg += "  labels:\n";
    for (const auto& [k, v] : m.labels) {
      cfg += "    " + q(k) + ": " + q(v) + "\n";
    }
  }
  if (!m.ports.empty()) {
    cfg += "  ports: " + list(m.ports) + "\n";
  }
  if (!m.stop_signal.empty()) {
    cfg += "  stop_signal: " + q(m.stop_signal) + "\n";
  }
  if (!cfg.empty()) {
    y += "config:\n" + cfg;
  }
  return y;
}

} // namespace

namespace {

// The escape character of the parser directives: leading "# key=value" comments before
// anything else (`# escape=``), '\\' when none sets it.
char escape_directive(const std::vector<std::string>& lines) {
  char escape = '\\';
  for (const auto& raw : lines) {
    std::string l = util::trim(raw, " \t\r");
    if (l.empty() || l[0] != '#') {
      break;
    }
    std::string d = util::ascii_lower(util::trim(l.substr(1), " \t\r"));
    if (d.rfind("escape=", 0) == 0 && d.size() > 7) {
      escape = util::trim(l.substr(1), " \t\r").substr(7)[0];
    } else if (d.find('=') == std::string::npos) {
      break;
    }
  }
  return escape;
}

// The heredoc words of an instruction's line (RUN <<EOF, COPY <<A <<B /dir/), in the
// order they appear: each body follows the line, one after another.
std::vector<std::string> heredoc_words(const std::string& cur) {
  std::vector<std::string> words;
  for (std::size_t hd = cur.find("<<"); hd != std::string::npos; hd = cur.find("<<", hd + 2)) {
    if (hd + 2 >= cur.size() || cur[hd + 2] == '<') {
      hd += 1; // "<<<" is not a heredoc
      continue;
    }
    std::string word = cur.substr(hd + 2);
    if (!word.empty() && word[0] == '-') {
      word.erase(0, 1);
    }
    word = word.substr(0, word.find_first_of(" \t;&|>"));
    if (!word.empty() && (word.front() == '"' || word.front() == '\'')) {
      word = word.substr(1, word.size() >= 2 ? word.size() - 2 : 0);
    }
    if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                             std::string::npos) {
      words.push_back(word);
    }
  }
  return words;
}

} // namespace

std::vector<DockerInstruction> parse_dockerfile(const std::string& text, const std::string& file_name) {
  std::vector<std::string> lines = split_lines(text);
  const char escape = escape_directive(lines);
  std::vector<DockerInstruction> out;
  std::string cur;
  int start = 0;
  bool continuing = false; // the line before ended with the escape character
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string l = lines[n];
    if (!l.empty() && l.back() == '\r') {
      l.pop_back();
    }
    std::string t = util::trim(l, " \t\r");
    if (t.empty() || t[0] == '#') {
      continue; // comments and blank lines, also inside a continued instruction
    }
    const bool first = !continuing; // the instruction's first line
    if (first) {
      start = static_cast<int>(n + 1);
    }
    std::string r = l;
    while (!r.empty() && (r.back() == ' ' || r.back() == '\t')) {
      r.pop_back();
    }
    // A continuation joins the lines as BuildKit does: the escape character and the
    // blanks after it go, nothing is added, and what is before it and the next line's
    // leading blanks stay (`ENV A=x\` then `y` is A=xy; `RUN apk add \` then `    gnupg`
    // keeps its blanks). Only the first line's leading blanks go.
    if (!r.empty() && r.back() == escape) {
      r.pop_back();
      std::size_t lead = first ? r.find_first_not_of(" \t") : 0;
      cur += lead == std::string::npos ? std::string() : r.substr(lead);
      continuing = true;
      continue;
    }
    continuing = false;
    cur += first ? util::trim(l, " \t\r") : l.substr(0, l.find_last_not_of(" \t\r") + 1);
    // Heredocs (RUN <<EOF ... EOF, COPY <<A <<B /dir/): each body belongs to the
    // instruction, one after another in the order their words appear on its line.
    std::vector<std::string> words = heredoc_words(cur);
    for (const auto& word : words) {
      while (n + 1 < lines.size()) {
        ++n;
        std::string body = lines[n];
        if (!body.empty() && body.back() == '\r') {
          body.pop_back();
        }
        cur += "\n" + body;
        if (util::trim(body, " \t\r") == word) {
          break;
        }
      }
    }
    std::size_t sp = cur.find_first_of(" \t");
    DockerInstruction in;
    in.line = start;
    in.escape = escape;
    in.keyword = upper(cur.substr(0, sp));
    in.args = sp == std::string::npos ? "" : util::trim(cur.substr(sp), " \t\r");
    in.text = cur;
    if (in.keyword.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
      throw Error(ErrorKind::input,
                  file_name + ":" + std::to_string(start) + ": '" + in.keyword + "' is not a Dockerfile instruction",
                  "is a line continuation (a trailing backslash) missing above?");
    }
    out.push_back(in);
    cur.clear();
  }
  if (!cur.empty()) {
    DockerInstruction in;
    in.line = start;
    in.escape = escape;
    std::size_t sp = cur.find_first_of(" \t");
    in.keyword = upper(cur.substr(0, sp));
    in.args = sp == std::string::npos ? "" : util::trim(cur.substr(sp), " \t\r");
    in.text = util::trim(cur, " \t\r");
    out.push_back(in);
  }
  return out;
}

FromDockerfile spec_from_dockerfile(const std::string& text, const std::string& file_name,
                                    const FromDockerfileOptions& options) {
  std::vector<DockerInstruction> ins = parse_dockerfile(text, file_name);
  std::string prefix = options.context;
  if (!prefix.empty() && prefix != "." && prefix.back() != '/') {
    prefix += '/';
  }
  if (prefix == "." || prefix == "./") {
    prefix.clear();
  }
  Mapper mp(prefix, file_name, options);
  bool seen_from = false;
  for (const auto& in : ins) {
    if (in.keyword == "FROM") {
      if (seen_from) {
        mp.restart();
      }
      seen_from = true;
    }
    mp.instruction(in);
  }
  mp.finish();
  if (!seen_from) {
    throw Error(ErrorKind::input, file_name + ": no FROM instruction", "is this a Dockerfile?");
  }
  FromDockerfile r;
  r.unmapped = mp.unmapped;
  r.commands = mp.m_lock_commands;
  r.files = mp.files;
  r.left_out = mp.left_out;
  for (const auto& [name, value] : options.build_args) {
    if (mp.m_used_build_args.count(name) == 0) {
      r.unused_build_args.push_back(name);
    }
  }
  r.spec = emit(mp.m, r.unmapped, file_name, r.commands, r.left_out);
  return r;
}

} // namespace templates
