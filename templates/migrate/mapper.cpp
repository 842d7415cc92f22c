// The walk over a Dockerfile's instructions: stages, ARG and FROM, the instructions that
// map one to one (WORKDIR, ENTRYPOINT, CMD, EXPOSE, USER, STOPSIGNAL), and what is not mapped.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

using util::Error;
using util::ErrorKind;

Copy local_copy(std::string from, std::string to, std::string owner, std::string mode) {
  Copy c;
  c.from = std::move(from);
  c.to = std::move(to);
  c.owner = std::move(owner);
  c.mode = std::move(mode);
  return c;
}

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

void Mapper::instruction(const DockerInstruction& raw) {
  m_cur = &raw;
  const std::string& k = raw.keyword;
  if (k == "ARG" && !m_seen_from) {
    arg(raw.args, m_global, nullptr); // a global ARG: for the FROM lines, not a stage of its own
    return;
  }
  m_stage_ins.push_back(&raw);
  if (k != "FROM" && k != "ARG") {
    m_stage_plain = false;
  }
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
      // A name as it is: the base's accounts, or the accounts layer's (useradd), which the
      // image's /etc/passwd then has.
      m.user = words(in.args).empty() ? "" : words(in.args)[0];
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
void Mapper::restart() {
  const bool image_stage = m_stage_plain && !m_stage_name.empty() && m_stage_image != "scratch";
  if (image_stage) {
    m_image_stages[m_stage_name] = m_stage_image;
  }
  for (const DockerInstruction* in : m_stage_ins) {
    if (image_stage) {
      // Nothing of it is built: a COPY --from=NAME reads the image (an image source).
      continue;
    }
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

void Mapper::finish() {
  for (auto& u : m_stage) {
    unmapped.push_back(u);
  }
  std::sort(unmapped.begin(), unmapped.end(), [](const Unmapped& a, const Unmapped& b) { return a.line < b.line; });
}

// `shown`: what to show instead of the instruction (one that holds a secret).
void Mapper::skip(const std::string& reason, const std::string& shown) {
  // The instruction is shown redacted: a URL in it may carry credentials.
  std::string text = shown.empty() ? util::redact_text(m_cur->text) : shown;
  m_stage.push_back({m_cur->line, shown_instruction(text), reason});
}

bool Mapper::no_vars(const std::string& args) {
  bool vars = false;
  words(args, &vars);
  if (vars) {
    skip(unresolved());
  }
  return !vars;
}

// Why a line with a variable left in it is not mapped: the variable, and where a
// value would come from.
std::string Mapper::unresolved() const {
  if (m_missing.empty()) {
    return "refers to a variable ($...), which a spec cannot expand: write the value";
  }
  std::string why =
      m_vars.count(m_missing) != 0 ? ", an ARG without a default (a --build-arg would give it)"
      : m_global.count(m_missing) != 0
          ? ", an ARG before the first FROM, which a stage sees only when it declares it again (ARG " + m_missing + ")"
          : ", which no ARG or ENV before it sets (the base's environment?)";
  return "refers to $" + m_missing + why + ": write the value";
}

// ARG NAME[=default] ...: into `scope` (a stage's ARG without a default takes the
// global one of that name, as Dockerfile does).
void Mapper::arg(const std::string& args, Vars& scope, const Vars* global) {
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

void Mapper::from(const std::string& args) {
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
  m_stage_image = m.base;
  m_stage_plain = true;
  m_stage_name = i + 2 < w.size() && util::ascii_lower(w[i + 1]) == "as" ? util::ascii_lower(w[i + 2]) : "";
  if (!platform.empty() && platform.find('$') == std::string::npos) {
    m.platform = platform;
  }
}

} // namespace templates::migrate

namespace templates {

using migrate::emit;
using migrate::Mapper;
using util::Error;
using util::ErrorKind;

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
