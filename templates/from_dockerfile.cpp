#include "templates/from_dockerfile.hpp"

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
  std::string t = eol == std::string::npos ? text : text.substr(0, eol) + " (heredoc body not shown)";
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
};

struct Layer {
  std::string name;
  bool wheels = false;
  bool debs = false;                 // a debs layer: `packages` from the base's distribution
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

class Mapper {
public:
  Mapper(std::string context) : m_context(std::move(context)) {}

  void instruction(const DockerInstruction& in) {
    m_cur = &in;
    m_stage_ins.push_back(&in);
    const std::string& k = in.keyword;
    if (k == "FROM") {
      from(in.args);
    } else if (k == "COPY" || k == "ADD") {
      copy(in);
    } else if (k == "WORKDIR") {
      if (!no_vars(in.args)) {
        return;
      }
      auto w = words(in.args);
      m.workdir = join_path(m.workdir, w.empty() ? "/" : w[0]);
    } else if (k == "ENV") {
      env(in.args);
    } else if (k == "LABEL") {
      label(in.args);
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
      }
    } else if (k == "STOPSIGNAL") {
      m.stop_signal = util::trim(in.args, " \t\r");
    } else if (k == "RUN") {
      run(in.args);
    } else if (k == "ARG") {
      skip("build arguments have no spec equivalent: write the value where it is used");
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
      skip("refers to a variable ($...), which a spec cannot expand: write the value");
    }
    return !vars;
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
    bool vars = false;
    words(args, &vars);
    if (vars) {
      skip("the base refers to a build argument: write the image reference as the spec's base");
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
      } else if (flag.rfind("--from=", 0) == 0) {
        skip("COPY --from copies out of another stage or image, which a spec cannot do");
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
        skip("refers to a variable ($...), which a spec cannot expand: write the paths");
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
    for (const auto& src : w) {
      if (is_remote_source(src)) {
        skip("ADD of a URL: download it into the project and copy the file");
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
      l.copies.push_back({m_context + from, dest, numeric_owner ? owner : "", mode});
    }
    m.layers.push_back(l);
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

  void env(const std::string& args) {
    bool vars = false;
    auto w = words(args, &vars);
    if (vars) {
      skip("refers to a variable ($...), which a spec cannot expand: write the value");
      return;
    }
    if (!w.empty() && w[0].find('=') == std::string::npos) {
      // legacy form: ENV NAME value with spaces
      std::string rest = util::trim(args, " \t\r");
      std::size_t sp = rest.find_first_of(" \t");
      add_env(w[0], sp == std::string::npos ? "" : util::trim(rest.substr(sp), " \t\r"));
      return;
    }
    for (const auto& kv : w) {
      std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        skip("cannot read '" + kv + "' as NAME=value");
        return;
      }
      add_env(kv.substr(0, eq), kv.substr(eq + 1));
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
      m.labels.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
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
    std::vector<std::vector<std::string>> segs(1);
    for (const auto& t : w) {
      if (t == "&&" || t == ";") {
        segs.emplace_back();
      } else if (t.size() > 1 && t.back() == ';') { // "libgl1;"
        segs.back().push_back(t.substr(0, t.size() - 1));
        segs.emplace_back();
      } else {
        segs.back().push_back(t);
      }
    }
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

  // RUN pip install -r FILE [-i URL]: a wheels layer from an index with FILE.lock.
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
    std::size_t i = 0;
    if (i < w.size() && (w[i] == "python" || w[i] == "python3" || w[i].rfind("python3.", 0) == 0) && i + 2 < w.size() &&
        w[i + 1] == "-m" && w[i + 2] == "pip") {
      i += 3;
    } else if (i < w.size() && (w[i] == "pip" || w[i] == "pip3")) {
      i += 1;
    } else {
      skip("RUN executes a command at build time; paddle-image runs nothing (put its result in the base or a layer)");
      return;
    }
    if (i >= w.size() || w[i] != "install") {
      skip("only `pip install -r FILE` maps to a spec (a wheels layer)");
      return;
    }
    ++i;
    std::vector<std::string> reqs;
    Layer l;
    l.wheels = true;
    for (; i < w.size(); ++i) {
      const std::string& a = w[i];
      auto value = [&](const std::string& flag) -> std::optional<std::string> {
        if (a == flag && i + 1 < w.size()) {
          return w[++i];
        }
        if (flag.rfind("--", 0) == 0 && a.rfind(flag + "=", 0) == 0) {
          return a.substr(flag.size() + 1);
        }
        return std::nullopt;
      };
      if (auto v = value("-r")) {
        reqs.push_back(*v);
      } else if (auto v2 = value("--requirement")) {
        reqs.push_back(*v2);
      } else if (auto v3 = value("-i")) {
        l.indexes.insert(l.indexes.begin(), *v3);
      } else if (auto v4 = value("--index-url")) {
        l.indexes.insert(l.indexes.begin(), *v4);
      } else if (auto v5 = value("--extra-index-url")) {
        l.indexes.push_back(*v5);
      } else if (auto v6 = value("-f")) {
        l.find_links.push_back(*v6);
      } else if (auto v7 = value("--find-links")) {
        l.find_links.push_back(*v7);
      } else if (a == "--no-cache-dir" || a == "--upgrade" || a == "-U" || a == "-q" || a == "--quiet" ||
                 a == "--disable-pip-version-check" || a == "--no-compile") {
        continue;
      } else {
        skip("`" + a + "` in a pip install: only `pip install -r FILE [-i URL]` maps to a spec (a wheels layer)");
        return;
      }
    }
    if (vars) {
      skip("refers to a variable ($...), which a spec cannot expand: write the value");
      return;
    }
    if (reqs.size() != 1) {
      skip(reqs.empty() ? "pip install without -r FILE: list the packages in a requirements file"
                        : "several -r files: merge them into one requirements file");
      return;
    }
    // Credentials in an index or find-links URL never reach the spec (nor its --json):
    // the URL is kept without them and the line says where they go instead.
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
    std::string req = m_context + (reqs[0].rfind("./", 0) == 0 ? reqs[0].substr(2) : reqs[0]);
    for (const auto& earlier : m.layers) {
      if (earlier.wheels && earlier.lock == req + ".lock") {
        skip("installs " + req + " again: wheels layer " + earlier.name +
             " already installs it (one lock per requirements file)");
        return;
      }
    }
    l.name = layer_name(m, "deps");
    l.lock = req + ".lock";
    m.layers.push_back(l);
    m_lock_commands.push_back("paddle-image lock " + req + " -o " + l.lock + " --spec spec.yaml --layer " + l.name);
  }

  std::string m_context;
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

std::string emit(const Mapping& m, const std::vector<Unmapped>& unmapped, const std::string& file_name,
                 const std::vector<std::string>& commands) {
  std::string y = "# Made by `paddle-image init --from-dockerfile " + file_name + "`. Reference: docs/spec.md.\n";
  if (!unmapped.empty()) {
    y += "# Not mapped (no spec equivalent; see docs/templates.md):\n";
    for (const auto& u : unmapped) {
      std::string t = u.instruction;
      std::replace(t.begin(), t.end(), '\n', ' ');
      y += "#   " + file_name + ":" + std::to_string(u.line) + ": " + t + "\n#     " + u.reason + "\n";
    }
  }
  for (const auto& c : commands) {
    y += (c.rfind("paddle-image lock --spec ", 0) == 0
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
    y += "    files:\n";
    for (const auto& c : l.copies) {
      y += "      - from: " + q(c.from) + "\n        to: " + q(c.to) + "\n";
      if (!c.owner.empty()) {
        y += "        owner: " + q(c.owner) + "\n";
      }
      if (c.from.rfind("../", 0) == 0) {
        y += "        allow_outside: true # the build context lies outside the spec's directory\n";
      }
      if (!c.mode.empty()) {
        y += "        mode: " + q(c.mode.size() < 4 ? std::string(4 - c.mode.size(), '0') + c.mode : c.mode) + "\n";
      }
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
      cfg += "    " + q(k) + ": " + q(v) + "\n";
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

std::vector<DockerInstruction> parse_dockerfile(const std::string& text, const std::string& file_name) {
  std::vector<std::string> lines = split_lines(text);
  char escape = '\\';
  // Parser directives: leading "# key=value" comments before anything else.
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
  std::vector<DockerInstruction> out;
  std::string cur;
  int start = 0;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string l = lines[n];
    if (!l.empty() && l.back() == '\r') {
      l.pop_back();
    }
    std::string t = util::trim(l, " \t\r");
    if (t.empty() || t[0] == '#') {
      continue; // comments and blank lines, also inside a continued instruction
    }
    if (cur.empty()) {
      start = static_cast<int>(n + 1);
    }
    std::string r = l;
    while (!r.empty() && (r.back() == ' ' || r.back() == '\t')) {
      r.pop_back();
    }
    if (!r.empty() && r.back() == escape) {
      r.pop_back();
      cur += util::trim(r, " \t\r") + " ";
      continue;
    }
    cur += util::trim(l, " \t\r");
    // Heredocs (RUN <<EOF ... EOF, COPY <<A <<B /dir/): each body belongs to the
    // instruction, one after another in the order their words appear on its line.
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
    std::size_t sp = cur.find_first_of(" \t");
    in.keyword = upper(cur.substr(0, sp));
    in.args = sp == std::string::npos ? "" : util::trim(cur.substr(sp), " \t\r");
    in.text = util::trim(cur, " \t\r");
    out.push_back(in);
  }
  return out;
}

FromDockerfile spec_from_dockerfile(const std::string& text, const std::string& file_name, const std::string& context) {
  std::vector<DockerInstruction> ins = parse_dockerfile(text, file_name);
  std::string prefix = context;
  if (!prefix.empty() && prefix != "." && prefix.back() != '/') {
    prefix += '/';
  }
  if (prefix == "." || prefix == "./") {
    prefix.clear();
  }
  Mapper mp(prefix);
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
  r.spec = emit(mp.m, r.unmapped, file_name, r.commands);
  return r;
}

} // namespace templates
