#pragma once
// What spec.cpp and layer_specs.cpp share to read a spec: the context that turns a YAML
// node into an error naming file:line:column and field, and the checks for paths,
// compression and booleans. Internal to spec/.
#include "spec/spec.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <yaml-cpp/yaml.h>

namespace spec::detail {

using util::Error;
using util::ErrorKind;

class Ctx {
public:
  explicit Ctx(fs::path file) : m_file(std::move(file)) {}

  std::string where(const YAML::Node& n) const {
    const auto& m = n.Mark();
    if (m.is_null()) {
      return m_file.string();
    }
    return m_file.string() + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& field, const std::string& msg,
                         const std::string& hint = {}) const {
    throw Error(ErrorKind::input, where(n) + ": " + field + ": " + msg, hint);
  }

  void check_keys(const YAML::Node& map, const std::string& field, const std::vector<std::string>& allowed) const {
    if (!map.IsMap()) {
      fail(map, field, "must be a mapping");
    }
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
        continue;
      }
      std::string best = util::closest(key, allowed);
      std::string known;
      for (const auto& a : allowed) {
        known += (known.empty() ? "" : ", ") + a;
      }
      std::string hint = !best.empty() ? "did you mean '" + best + "'?" : "known keys: " + known;
      fail(it->first, join(field, key), "unknown key '" + key + "'", hint);
    }
  }

  static std::string join(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }

  std::string str(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) {
      fail(n, field, "must be a string");
    }
    return n.Scalar();
  }

  std::vector<std::string> str_list(const YAML::Node& n, const std::string& field) const {
    std::vector<std::string> out;
    if (n.IsScalar()) {
      out.push_back(n.Scalar());
      return out;
    }
    if (!n.IsSequence()) {
      fail(n, field, "must be a list of strings");
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      out.push_back(str(n[i], field + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  std::int64_t integer(const YAML::Node& n, const std::string& field) const {
    std::string s = str(n, field);
    try {
      std::size_t pos = 0;
      long long v = std::stoll(s, &pos, 10);
      if (pos != s.size()) {
        throw std::invalid_argument(s);
      }
      return v;
    } catch (const std::exception&) {
      fail(n, field, "'" + s + "' is not an integer");
    }
  }

  std::uint32_t mode(const YAML::Node& n, const std::string& field) const {
    std::string s = str(n, field);
    bool ok =
        !s.empty() && s.size() <= 5 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '7'; });
    if (!ok) {
      fail(n, field, "'" + s + "' is not an octal mode", "write it quoted, e.g. \"0644\" or \"0755\"");
    }
    auto v = static_cast<std::uint32_t>(std::stoul(s, nullptr, 8));
    if (v > 07777) {
      fail(n, field, "'" + s + "' is not a file mode", "use 0000-7777");
    }
    return v;
  }

  OwnerSpec owner(const YAML::Node& n, const std::string& field) const {
    OwnerSpec o;
    if (n.IsMap()) {
      check_keys(n, field, {"uid", "gid", "uname", "gname"});
      if (n["uid"]) {
        o.uid = integer(n["uid"], field + ".uid");
      }
      if (n["gid"]) {
        o.gid = integer(n["gid"], field + ".gid");
      }
      if (n["uname"]) {
        o.uname = str(n["uname"], field + ".uname");
      }
      if (n["gname"]) {
        o.gname = str(n["gname"], field + ".gname");
      }
    } else {
      std::string s = str(n, field);
      auto colon = s.find(':');
      std::string u = s.substr(0, colon);
      std::string g = colon == std::string::npos ? u : s.substr(colon + 1);
      auto numeric = [](const std::string& x) {
        return !x.empty() && x.size() <= 10 && std::all_of(x.begin(), x.end(), ::isdigit);
      };
      if (!numeric(u) || !numeric(g)) {
        fail(n, field, "'" + s + "' is not UID[:GID]", "use numbers, e.g. \"1000:1000\"");
      }
      o.uid = std::stoll(u);
      o.gid = std::stoll(g);
    }
    if (o.uid < 0 || o.gid < 0) {
      fail(n, field, "uid and gid must not be negative");
    }
    if (o.uid > k_max_id || o.gid > k_max_id) {
      fail(n, field, "uid and gid must be at most " + std::to_string(k_max_id),
           "tar headers and container runtimes take ids 0-" + std::to_string(k_max_id));
    }
    return o;
  }

  fs::path file() const { return m_file; }

private:
  fs::path m_file;
};

bool has_control(const std::string& s);
// An absolute path inside the image, without control characters, '..' above the root
// or a component longer than 255 bytes.
void check_image_path(const Ctx& c, const YAML::Node& n, const std::string& field, const std::string& p);
// A source path, relative to the spec's directory unless absolute; it must exist unless
// must_exist is false.
fs::path source_path(const Ctx& c, const YAML::Node& n, const std::string& field, const fs::path& dir,
                     bool must_exist = true);
CompressionSpec compression(const Ctx& c, const YAML::Node& n, const std::string& field,
                            const CompressionSpec* inherited = nullptr);
bool boolean(const Ctx& c, const YAML::Node& v, const std::string& field);
fs::path resolved(const fs::path& p);
// Where `from` really is (symlinks resolved) relative to the spec directory ("" for the
// directory itself), or nothing when it lies outside.
std::optional<std::string> inside_spec_dir(const fs::path& from, const fs::path& dir);
// `split: 256Mi` (a byte quantity, at least 1Mi) or `split: none` / 0.
std::uint64_t split_size(const Ctx& c, const YAML::Node& n, const std::string& field);

// An accounts layer's own keys (accounts.cpp), as layer_specs.cpp's table of kinds calls it.
void parse_accounts_layer(const Ctx& c, const YAML::Node& n, const std::string& key, const std::string& field,
                          const BuildSpec& s, LayerSpec& l);

// One entry of `layers:` (layer_specs.cpp): the common keys and the kind's own.
LayerSpec parse_layer(const Ctx& c, const YAML::Node& n, const std::string& field, const BuildSpec& s);

} // namespace spec::detail
