#include "spec/spec.hpp"

#include "spec/env_value.hpp"
#include "spec/parse_context.hpp"
#include "spec/sources_lock.hpp"

#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <yaml-cpp/yaml.h>

namespace spec {

using util::Error;
using util::ErrorKind;

using namespace detail;

namespace {

void config(const Ctx& c, const YAML::Node& n, ConfigSpec& cfg) {
  const std::string f = "config";
  c.check_keys(n, f, {"entrypoint", "cmd", "env", "workdir", "user", "labels", "ports", "stop_signal"});
  if (n["entrypoint"]) {
    cfg.entrypoint = c.str_list(n["entrypoint"], f + ".entrypoint");
  }
  if (n["cmd"]) {
    cfg.cmd = c.str_list(n["cmd"], f + ".cmd");
  }
  if (n["env"]) {
    if (!n["env"].IsMap()) {
      c.fail(n["env"], f + ".env", "must be a mapping of NAME: value");
    }
    for (auto it = n["env"].begin(); it != n["env"].end(); ++it) {
      std::string k = it->first.Scalar();
      if (k.empty() || k.find('=') != std::string::npos) {
        c.fail(it->first, f + ".env", "'" + k + "' is not a valid variable name");
      }
      std::string v = c.str(it->second, f + ".env." + k);
      try {
        (void)EnvValue::parse(v);
      } catch (const std::invalid_argument& e) {
        c.fail(it->second, f + ".env." + k, e.what(),
               "references are $NAME, ${NAME} and ${NAME:-word} (docs/spec.md, config); write $$ for a literal '$'");
      }
      cfg.env.emplace_back(k, v);
    }
  }
  if (n["workdir"]) {
    cfg.workdir = c.str(n["workdir"], f + ".workdir");
    check_image_path(c, n["workdir"], f + ".workdir", cfg.workdir);
  }
  if (n["user"]) {
    cfg.user = c.str(n["user"], f + ".user");
  }
  if (n["stop_signal"]) {
    cfg.stop_signal = c.str(n["stop_signal"], f + ".stop_signal");
  }
  if (n["labels"]) {
    if (!n["labels"].IsMap()) {
      c.fail(n["labels"], f + ".labels", "must be a mapping of key: value");
    }
    for (auto it = n["labels"].begin(); it != n["labels"].end(); ++it) {
      cfg.labels[it->first.Scalar()] = c.str(it->second, f + ".labels." + it->first.Scalar());
    }
  }
  if (n["ports"]) {
    auto ports = c.str_list(n["ports"], f + ".ports");
    for (std::size_t i = 0; i < ports.size(); ++i) {
      std::string p = ports[i];
      std::string num = p.substr(0, p.find('/'));
      std::string proto = p.find('/') == std::string::npos ? "tcp" : p.substr(p.find('/') + 1);
      bool ok = !num.empty() && num.size() <= 5 && std::all_of(num.begin(), num.end(), ::isdigit) &&
                std::stol(num) > 0 && std::stol(num) < 65536 && (proto == "tcp" || proto == "udp" || proto == "sctp");
      if (!ok) {
        const YAML::Node& pn = n["ports"].IsSequence() ? n["ports"][i] : n["ports"];
        c.fail(pn, f + ".ports[" + std::to_string(i) + "]", "'" + p + "' is not PORT[/tcp|udp|sctp]");
      }
      cfg.ports.push_back(num + "/" + proto);
    }
    std::sort(cfg.ports.begin(), cfg.ports.end());
    cfg.ports.erase(std::unique(cfg.ports.begin(), cfg.ports.end()), cfg.ports.end());
  }
}

// yaml-cpp keeps every pair of a mapping but `node[key]` sees only the first, so a
// repeated key would drop a value silently: refuse it, naming both places.
// No spec field nests deeper than a few levels; an alias to a node that holds it (`a: &x
// {b: *x}`) makes the tree endless, so the walk stops at k_max_depth.
constexpr int k_max_depth = 64;
void check_duplicate_keys(const Ctx& c, const YAML::Node& n, const std::string& field, int depth = 0) {
  if (depth > k_max_depth && (n.IsMap() || n.IsSequence())) {
    c.fail(n, field.substr(0, 200), "nests deeper than " + std::to_string(k_max_depth) + " levels",
           "a YAML alias (*name) must not refer to a mapping or list that contains it; write the value out");
  }
  if (n.IsMap()) {
    std::map<std::string, YAML::Node> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string{};
      std::string f = Ctx::join(field, key);
      if (it->first.IsScalar()) {
        auto [prev, inserted] = seen.emplace(key, it->first);
        if (!inserted) {
          c.fail(it->first, f, "key '" + key + "' appears twice (first at " + c.where(prev->second) + ")",
                 "keep one of them; a repeated key would silently drop one value");
        }
      }
      check_duplicate_keys(c, it->second, f, depth + 1);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      check_duplicate_keys(c, n[i], field + "[" + std::to_string(i) + "]", depth + 1);
    }
  }
}

// The forms the doctor reads back from the labels (docs/labels.md).
void check_requires(const Ctx& c, const YAML::Node& r, const RequiresSpec& q) {
  static const std::regex version("[0-9]{1,9}(\\.[0-9]{1,9}){0,3}");
  static const std::regex paddle("[0-9]{1,9}(\\.[0-9]{1,9}){0,3}((a|b|rc)[0-9]{1,9})?(\\.post[0-9]{1,9})?");
  static const std::regex arch("(sm_)?[1-9][0-9]{1,2}a?|[1-9][0-9]?\\.[0-9]");
  for (auto [key, value, re, forms] :
       {std::tuple{"cuda", &q.cuda, &version, "a CUDA version, e.g. \"12.6\""},
        std::tuple{"cudnn", &q.cudnn, &version, "a cuDNN version, e.g. \"9.5\""},
        std::tuple{"driver_min", &q.driver_min, &version, "a driver version, e.g. \"560.28.03\" or \"535\""},
        std::tuple{"paddle", &q.paddle, &paddle, "a Paddle version, e.g. \"3.0.0\" or \"2.6.1.post117\""}}) {
    if (!value->empty() && !std::regex_match(*value, *re)) {
      c.fail(r[key], std::string("requires.") + key, "'" + util::escape_bytes(*value) + "' is not " + forms,
             "write it quoted; the doctor compares it with the GPU host's");
    }
  }
  for (std::size_t i = 0; i < q.gpu_archs.size(); ++i) {
    if (!std::regex_match(q.gpu_archs[i], arch)) {
      c.fail(r["gpu_archs"].IsSequence() ? r["gpu_archs"][i] : r["gpu_archs"],
             "requires.gpu_archs[" + std::to_string(i) + "]",
             "'" + util::escape_bytes(q.gpu_archs[i]) + "' is not a GPU architecture",
             "use an SM architecture or compute capability: sm_80, 80 or \"8.0\" (not a family name like ampere)");
    }
  }
}

} // namespace

std::vector<std::string> read_ignore_file(const fs::path& file) {
  std::vector<std::string> out;
  std::string text = util::read_file(file);
  std::size_t line_no = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    std::string line = text.substr(i, j == std::string::npos ? std::string::npos : j - i);
    i = j == std::string::npos ? text.size() : j + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') {
      continue;
    }
    line = line.substr(start);
    if (has_control(line)) {
      throw Error(ErrorKind::input,
                  file.string() + ":" + std::to_string(line_no) + ": pattern '" + util::escape_bytes(line) +
                      "' holds a control character",
                  "remove it");
    }
    std::string body = line.front() == '!' ? line.substr(1) : line;
    while (!body.empty() && body.back() == '/') {
      body.pop_back();
    }
    if (body.empty() || body == "/" || body.find("..") != std::string::npos) {
      throw Error(ErrorKind::input,
                  file.string() + ":" + std::to_string(line_no) + ": '" + line + "' is not a usable pattern",
                  "patterns name paths inside the spec's directory, e.g. *.ckpt, /data/raw or !keep.txt");
    }
    out.push_back(line);
  }
  return out;
}

namespace {

YAML::Node load_yaml(const std::string& text, const fs::path& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw Error(ErrorKind::input,
                file.string() + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                    ": invalid YAML: " + e.msg,
                "check indentation and quoting near that position");
  }
  if (!root.IsMap()) {
    throw Error(ErrorKind::input, file.string() + ": the spec must be a YAML mapping",
                "see docs/spec.md for an example");
  }
  return root;
}

// Where the spec is and what its sources leave out (.git, .paddleimageignore).
BuildSpec spec_at(const fs::path& file) {
  BuildSpec s;
  s.file = file;
  s.dir = file.has_parent_path() ? fs::absolute(file).parent_path() : fs::current_path();
  s.ignore = {".git"};
  if (fs::path ignore = s.dir / ".paddleimageignore"; fs::is_regular_file(ignore)) {
    auto patterns = read_ignore_file(ignore);
    s.ignore.insert(s.ignore.end(), patterns.begin(), patterns.end());
  }
  return s;
}

// Reports an Error about node n's value as that node's error (file:line:column), unless
// it already names the node.
template <typename F> void at_node(const Ctx& c, const YAML::Node& n, const std::string& field, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(c.where(n), 0) == 0) {
      throw;
    }
    c.fail(n, field, e.what(), e.hint());
  }
}

void parse_image(const Ctx& c, const YAML::Node& img, BuildSpec& s) {
  c.check_keys(img, "image", {"name", "tags", "version", "source"});
  if (img["name"]) {
    s.name = c.str(img["name"], "image.name");
    at_node(c, img["name"], "image.name", [&] {
      auto ref = oci::ImageRef::parse(s.name);
      if (ref.kind != oci::ImageRef::Kind::registry || !ref.digest.empty()) {
        c.fail(img["name"], "image.name", "'" + s.name + "' must be a repository name without digest",
               "e.g. registry.example.com/team/app; tags go in image.tags");
      }
    });
  }
  if (img["tags"]) {
    s.tags = c.str_list(img["tags"], "image.tags");
    for (std::size_t i = 0; i < s.tags.size(); ++i) {
      if (!oci::is_valid_tag(s.tags[i])) {
        c.fail(img["tags"].IsSequence() ? img["tags"][i] : img["tags"], "image.tags[" + std::to_string(i) + "]",
               "'" + s.tags[i] + "' is not a valid tag", "letters, digits, '_', '.', '-' (max 128)");
      }
    }
  }
  if (img["version"]) {
    s.version = c.str(img["version"], "image.version");
  }
  if (img["source"]) {
    s.source = c.str(img["source"], "image.source");
  }
}

// scratch, auto, an oci: layout or a docker-archive: file (relative to the spec), or a
// registry reference.
void parse_base(const Ctx& c, const YAML::Node& b, BuildSpec& s) {
  s.base = c.str(b, "base");
  s.base_resolved = s.base;
  s.base_origin = c.where(b);
  if (s.base == "scratch" || s.base == "auto") {
    return;
  }
  at_node(c, b, "base", [&] {
    auto ref = oci::ImageRef::parse(s.base);
    if (ref.kind != oci::ImageRef::Kind::registry && fs::path(ref.path).is_relative()) {
      ref.path = (s.dir / ref.path).lexically_normal().string();
      s.base_resolved = ref.str();
    }
  });
}

oci::Platform platform_of(const Ctx& c, const YAML::Node& p) {
  std::string name = c.str(p, "platform");
  if (name != "linux/amd64" && name != "linux/arm64") {
    c.fail(p, "platform", "unsupported platform '" + name + "'", "use linux/amd64 or linux/arm64");
  }
  return oci::parse_platform(name, "platform");
}

PythonSpec parse_python(const Ctx& c, const YAML::Node& py) {
  c.check_keys(py, "python", {"version", "interpreter", "site_packages", "scripts_dir", "prefix", "glibc"});
  PythonSpec ps;
  ps.origin = c.where(py);
  if (!py["version"]) {
    c.fail(py, "python", "missing 'version'", "e.g. version: \"3.10\"");
  }
  ps.version = c.str(py["version"], "python.version");
  if (ps.version.rfind("3.", 0) != 0 || ps.version.size() < 3 ||
      !std::all_of(ps.version.begin() + 2, ps.version.end(), ::isdigit)) {
    c.fail(py["version"], "python.version", "'" + ps.version + "' is not a Python 3 version", "e.g. \"3.10\"");
  }
  for (auto [key, field] : {std::pair{"interpreter", &ps.interpreter}, std::pair{"site_packages", &ps.site_packages},
                            std::pair{"scripts_dir", &ps.scripts_dir}, std::pair{"prefix", &ps.prefix}}) {
    if (py[key]) {
      *field = c.str(py[key], std::string("python.") + key);
      check_image_path(c, py[key], std::string("python.") + key, *field);
    }
  }
  if (py["glibc"]) {
    std::string g = c.str(py["glibc"], "python.glibc");
    static const std::regex glibc_re("([0-9]{1,3})\\.([0-9]{1,3})");
    std::smatch gm;
    if (!std::regex_match(g, gm, glibc_re)) {
      c.fail(py["glibc"], "python.glibc", "'" + g + "' is not MAJOR.MINOR", "e.g. \"2.31\"");
    }
    ps.glibc = std::pair{std::stoi(gm[1]), std::stoi(gm[2])};
  }
  return ps;
}

ResolveSpec parse_resolve(const Ctx& c, const YAML::Node& rs, const fs::path& dir) {
  c.check_keys(rs, "resolve",
               {"paddle", "cuda", "cudnn", "tensorrt", "python", "gpus", "drivers", "registry", "kind", "strict_driver",
                "allow_forward_compat", "pre", "matrix", "layout"});
  ResolveSpec r;
  r.origin = c.where(rs);
  for (auto it = rs.begin(); it != rs.end(); ++it) {
    r.origins[it->first.Scalar()] = c.where(it->second);
  }
  for (auto [key, field] :
       {std::pair{"paddle", &r.paddle}, std::pair{"cuda", &r.cuda}, std::pair{"cudnn", &r.cudnn},
        std::pair{"python", &r.python}, std::pair{"registry", &r.registry}, std::pair{"kind", &r.kind}}) {
    if (rs[key]) {
      *field = c.str(rs[key], std::string("resolve.") + key);
    }
  }
  for (auto [key, field] : {std::pair{"tensorrt", &r.tensorrt}, std::pair{"strict_driver", &r.strict_driver},
                            std::pair{"allow_forward_compat", &r.allow_forward_compat}, std::pair{"pre", &r.pre}}) {
    if (rs[key]) {
      const YAML::Node& v = rs[key];
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
        c.fail(v, std::string("resolve.") + key, "must be true or false");
      }
      *field = v.Scalar() == "true";
    }
  }
  for (auto [key, list] : {std::pair{"gpus", &r.gpus}, std::pair{"drivers", &r.drivers}}) {
    if (rs[key]) {
      *list = c.str_list(rs[key], std::string("resolve.") + key);
      for (std::size_t i = 0; rs[key].IsSequence() && i < rs[key].size(); ++i) {
        r.origins[std::string(key) + "[" + std::to_string(i) + "]"] = c.where(rs[key][i]);
      }
    }
  }
  if (rs["matrix"]) {
    auto files = c.str_list(rs["matrix"], "resolve.matrix");
    for (std::size_t i = 0; i < files.size(); ++i) {
      const YAML::Node& fn = rs["matrix"].IsSequence() ? rs["matrix"][i] : rs["matrix"];
      r.matrix.push_back(source_path(c, fn, "resolve.matrix", dir).string());
    }
  }
  if (rs["layout"]) {
    std::string l = c.str(rs["layout"], "resolve.layout");
    if (l.rfind("oci:", 0) != 0 || l.size() == 4) {
      c.fail(rs["layout"], "resolve.layout", "'" + l + "' must be an oci:DIR layout", "e.g. layout: oci:bases");
    }
    std::string layout_dir = l.substr(4);
    r.layout = fs::path(layout_dir).is_absolute() ? layout_dir : (dir / layout_dir).lexically_normal().string();
  }
  return r;
}

RequiresSpec parse_requires(const Ctx& c, const YAML::Node& r) {
  c.check_keys(r, "requires", {"cuda", "cudnn", "paddle", "driver_min", "gpu_archs", "gpu_memory"});
  RequiresSpec q;
  for (auto [key, field] : {std::pair{"cuda", &q.cuda}, std::pair{"cudnn", &q.cudnn}, std::pair{"paddle", &q.paddle},
                            std::pair{"driver_min", &q.driver_min}}) {
    if (r[key]) {
      *field = c.str(r[key], std::string("requires.") + key);
    }
  }
  if (r["gpu_archs"]) {
    q.gpu_archs = c.str_list(r["gpu_archs"], "requires.gpu_archs");
  }
  if (r["gpu_memory"]) {
    q.gpu_memory = c.str(r["gpu_memory"], "requires.gpu_memory");
    auto bytes = util::parse_byte_quantity(q.gpu_memory);
    if (!bytes || *bytes == 0) {
      c.fail(r["gpu_memory"], "requires.gpu_memory",
             "'" + util::escape_bytes(q.gpu_memory) + "' is not a memory quantity",
             "write a Kubernetes quantity such as \"40Gi\" or \"46068Mi\" (usable MiB as nvidia.com/gpu.memory "
             "reports it, below the marketed size)");
    }
    q.gpu_memory_mib = util::mib_rounded_up(*bytes);
  }
  check_requires(c, r, q);
  return q;
}

std::int64_t parse_epoch(const Ctx& c, const YAML::Node& e) {
  std::int64_t epoch = c.integer(e, "source_date_epoch");
  if (epoch < 0 || epoch > k_max_epoch) {
    c.fail(e, "source_date_epoch", "must be between 0 and " + std::to_string(k_max_epoch),
           "the latest date an image's `created` can hold is 9999-12-31T23:59:59Z");
  }
  return epoch;
}

// Layers in order, each name used once; the spec's compression and ignore rules are
// their defaults.
std::vector<LayerSpec> parse_layers(const Ctx& c, const YAML::Node& ls, const BuildSpec& s) {
  if (!ls.IsSequence()) {
    c.fail(ls, "layers", "must be a list of layers");
  }
  std::vector<LayerSpec> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    std::string f = "layers[" + std::to_string(i) + "]";
    LayerSpec l = parse_layer(c, ls[i], f, s);
    if (!names.insert(l.name).second) {
      c.fail(ls[i]["name"], f + ".name", "layer name '" + l.name + "' is used twice", "give each layer its own name");
    }
    for (const auto& earlier : out) {
      if (l.as_debs() != nullptr && earlier.as_debs() != nullptr) {
        // Each debs layer writes dpkg's whole status file: a second would drop the first's.
        c.fail(ls[i], f, "a spec has one debs layer, and layer '" + earlier.name + "' is one",
               "list every package in layer '" + earlier.name + "'");
      }
      if (l.as_accounts() != nullptr && earlier.as_accounts() != nullptr) {
        // Each accounts layer writes /etc/passwd and /etc/group whole from what it lands
        // on, which holds the base's files, not an earlier layer's.
        c.fail(ls[i], f, "a spec has one accounts layer, and layer '" + earlier.name + "' is one",
               "list every user and group in layer '" + earlier.name + "'");
      }
    }
    out.push_back(l);
  }
  return out;
}

// The top-level sections, each by its own parser, in the order errors are reported.
void parse_sections(const Ctx& c, const YAML::Node& root, BuildSpec& s) {
  check_duplicate_keys(c, root, "");
  c.check_keys(root, "",
               {"image", "base", "platform", "python", "requires", "resolve", "layers", "compression", "split",
                "config", "source_date_epoch"});
  if (auto img = root["image"]) {
    parse_image(c, img, s);
  }
  if (auto b = root["base"]) {
    parse_base(c, b, s);
  }
  if (auto p = root["platform"]) {
    s.platform = platform_of(c, p);
  }
  if (auto py = root["python"]) {
    s.python = parse_python(c, py);
  }
  if (auto rs = root["resolve"]) {
    s.resolve = parse_resolve(c, rs, s.dir);
  }
  if (auto r = root["requires"]) {
    s.requires_ = parse_requires(c, r);
  }
  if (auto cm = root["compression"]) {
    s.compression = compression(c, cm, "compression");
  }
  if (auto sp = root["split"]) {
    s.split = split_size(c, sp, "split");
  }
  if (auto e = root["source_date_epoch"]) {
    s.source_date_epoch = parse_epoch(c, e);
  }
  if (auto ls = root["layers"]) {
    s.layers = parse_layers(c, ls, s);
  }
  if (auto cfg = root["config"]) {
    config(c, cfg, s.config);
  }
}

} // namespace

BuildSpec parse(const std::string& text, const fs::path& file) {
  Ctx c(file);
  YAML::Node root = load_yaml(text, file);
  BuildSpec s = spec_at(file);
  try {
    parse_sections(c, root, s);
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::input, file.string() + ":" + std::to_string(e.mark.line + 1) + ":" +
                                      std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  s.sources_lock = sources_lock_path(file);
  apply_sources_lock(s);
  return s;
}

BuildSpec load(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw Error(ErrorKind::input, "spec file '" + file.string() + "' is a directory",
                "pass the spec file itself, e.g. " + (file / "spec.yaml").string());
  }
  if (!fs::is_regular_file(file, ec)) {
    throw Error(ErrorKind::input, "spec file '" + file.string() + "' does not exist",
                "pass the path to your spec.yaml (see docs/spec.md)");
  }
  return parse(util::read_file(file), file);
}

} // namespace spec
