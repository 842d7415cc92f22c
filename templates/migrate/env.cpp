// ENV, LABEL and MAINTAINER: config.env and config.labels (a secret is never copied), and
// `echo "export NAME=VALUE" >> ~/.bashrc`.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// `echo "export NAME=VALUE" >> ~/.bashrc` (or /root/.bashrc, /etc/bash.bashrc): NAME
// and VALUE, for config.env. Nothing (nullopt) when the value is one the shell would
// read otherwise than as written (quotes, blanks, escapes, expansions, several names).
std::optional<std::pair<std::string, std::string>> Mapper::bashrc_export(const std::vector<std::string>& seg) {
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

// A variable that carries a secret (credentials in a URL, a signed URL's signature, or
// a name that says so) is not copied: an image's environment is readable by everyone
// who can pull it.
bool Mapper::secret_env(const std::string& name, const std::string& value) {
  if (util::redact_text(value) != value) {
    return true;
  }
  std::string n = util::ascii_lower(name);
  for (const char* word : {"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key"}) {
    if (n.find(word) != std::string::npos) {
      return true;
    }
  }
  return false;
}

void Mapper::add_env(const std::string& name, const std::string& value) {
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
void Mapper::env(const DockerInstruction& in) {
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

void Mapper::label(const std::string& args) {
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
void Mapper::set_label(const std::string& key, const std::string& value) {
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
void Mapper::maintainer(const std::string& args) {
  std::string who = util::trim(args, " \t\r");
  if (who.empty()) {
    skip("MAINTAINER without a name (Docker refuses it: MAINTAINER requires exactly one argument)");
    return;
  }
  set_label("org.opencontainers.image.authors", who);
}

} // namespace templates::migrate
