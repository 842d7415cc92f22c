#include "oci/types.hpp"

#include "util/error.hpp"

#include <algorithm>

namespace oci {

using nlohmann::json;

namespace {

util::Error bad(const std::string& what) {
  return util::Error(util::ErrorKind::input, what);
}

std::string get_string(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return {};
  }
  if (!it->is_string()) {
    throw bad(std::string("field '") + key + "' must be a string");
  }
  return it->get<std::string>();
}

Annotations get_map(const json& j, const char* key) {
  Annotations out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return out;
  }
  if (!it->is_object()) {
    throw bad(std::string("field '") + key + "' must be an object");
  }
  for (auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      throw bad(std::string("field '") + key + "." + k + "' must be a string");
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

std::optional<std::vector<std::string>> get_strings(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return std::nullopt;
  }
  if (!it->is_array()) {
    throw bad(std::string("field '") + key + "' must be an array of strings");
  }
  std::vector<std::string> out;
  for (auto& v : *it) {
    if (!v.is_string()) {
      throw bad(std::string("field '") + key + "' must be an array of strings");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

} // namespace

void ImageConfig::set_env(const std::string& key, const std::string& value) {
  std::string prefix = key + "=";
  for (auto& e : config.env) {
    if (e.rfind(prefix, 0) == 0) {
      e = prefix + value;
      return;
    }
  }
  config.env.push_back(prefix + value);
}

std::optional<std::string> ImageConfig::get_env(const std::string& key) const {
  std::string prefix = key + "=";
  for (const auto& e : config.env) {
    if (e.rfind(prefix, 0) == 0) {
      return e.substr(prefix.size());
    }
  }
  return std::nullopt;
}

json to_json(const Descriptor& d) {
  json j = json::object();
  for (const auto& [k, v] : d.extra) {
    j[k] = v;
  }
  j["mediaType"] = d.media_type;
  j["digest"] = d.digest.str();
  j["size"] = d.size;
  if (!d.annotations.empty()) {
    j["annotations"] = d.annotations;
  }
  if (d.platform) {
    json p = {{"architecture", d.platform->architecture}, {"os", d.platform->os}};
    if (!d.platform->variant.empty()) {
      p["variant"] = d.platform->variant;
    }
    j["platform"] = p;
  }
  return j;
}

json to_json(const Manifest& m) {
  json layers = json::array();
  for (const auto& l : m.layers) {
    layers.push_back(to_json(l));
  }
  json j = {{"schemaVersion", 2}, {"mediaType", m.media_type}, {"config", to_json(m.config)}, {"layers", layers}};
  if (!m.annotations.empty()) {
    j["annotations"] = m.annotations;
  }
  return j;
}

json to_json(const Index& i) {
  json manifests = json::array();
  for (const auto& m : i.manifests) {
    manifests.push_back(to_json(m));
  }
  json j = json::object();
  for (const auto& [k, v] : i.extra) {
    j[k] = v;
  }
  j["schemaVersion"] = 2;
  j["mediaType"] = media::k_index;
  j["manifests"] = manifests;
  if (!i.annotations.empty()) {
    j["annotations"] = i.annotations;
  }
  return j;
}

json to_json(const ImageConfig& c) {
  json rc = json::object();
  const auto& r = c.config;
  if (!r.user.empty()) {
    rc["User"] = r.user;
  }
  if (!r.env.empty()) {
    rc["Env"] = r.env;
  }
  if (r.entrypoint) {
    rc["Entrypoint"] = *r.entrypoint;
  }
  if (r.cmd) {
    rc["Cmd"] = *r.cmd;
  }
  if (!r.working_dir.empty()) {
    rc["WorkingDir"] = r.working_dir;
  }
  if (!r.labels.empty()) {
    rc["Labels"] = r.labels;
  }
  if (!r.exposed_ports.empty()) {
    json ports = json::object();
    for (const auto& p : r.exposed_ports) {
      ports[p] = json::object();
    }
    rc["ExposedPorts"] = ports;
  }
  if (!r.stop_signal.empty()) {
    rc["StopSignal"] = r.stop_signal;
  }
  json diff_ids = json::array();
  for (const auto& d : c.diff_ids) {
    diff_ids.push_back(d.str());
  }
  json history = json::array();
  for (const auto& h : c.history) {
    json e = json::object();
    if (!h.created.empty()) {
      e["created"] = h.created;
    }
    if (!h.created_by.empty()) {
      e["created_by"] = h.created_by;
    }
    if (!h.comment.empty()) {
      e["comment"] = h.comment;
    }
    if (h.empty_layer) {
      e["empty_layer"] = true;
    }
    history.push_back(e);
  }
  json j = {{"architecture", c.architecture},
            {"os", c.os},
            {"config", rc},
            {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}},
            {"history", history}};
  if (!c.created.empty()) {
    j["created"] = c.created;
  }
  if (!c.variant.empty()) {
    j["variant"] = c.variant;
  }
  return j;
}

Descriptor descriptor_from_json(const json& j) {
  if (!j.is_object()) {
    throw bad("a descriptor must be an object");
  }
  Descriptor d;
  d.media_type = get_string(j, "mediaType");
  d.digest = Digest::parse(get_string(j, "digest"));
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_integer() || size->get<std::int64_t>() < 0) {
    throw bad("descriptor " + d.digest.str() + " has no valid size");
  }
  d.size = size->get<std::int64_t>();
  d.annotations = get_map(j, "annotations");
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.platform = Platform{get_string(*p, "architecture"), get_string(*p, "os"), get_string(*p, "variant")};
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "mediaType" && k != "digest" && k != "size" && k != "annotations" && k != "platform") {
      d.extra[k] = v;
    }
  }
  return d;
}

Manifest manifest_from_json(const json& j) {
  if (!j.is_object() || !j.contains("config") || !j.contains("layers") || !j["layers"].is_array()) {
    throw bad("not an image manifest (no config or layers)");
  }
  Manifest m;
  m.media_type = get_string(j, "mediaType");
  if (m.media_type.empty()) {
    m.media_type = media::k_manifest;
  }
  m.config = descriptor_from_json(j["config"]);
  for (const auto& l : j["layers"]) {
    m.layers.push_back(descriptor_from_json(l));
  }
  m.annotations = get_map(j, "annotations");
  return m;
}

Index index_from_json(const json& j) {
  if (!j.is_object() || !j.contains("manifests") || !j["manifests"].is_array()) {
    throw bad("not an image index (no manifests array)");
  }
  Index i;
  for (const auto& m : j["manifests"]) {
    i.manifests.push_back(descriptor_from_json(m));
  }
  i.annotations = get_map(j, "annotations");
  for (const auto& [k, v] : j.items()) {
    if (k != "schemaVersion" && k != "mediaType" && k != "manifests" && k != "annotations") {
      i.extra[k] = v;
    }
  }
  return i;
}

ImageConfig config_from_json(const json& j) {
  if (!j.is_object()) {
    throw bad("an image config must be an object");
  }
  ImageConfig c;
  c.created = get_string(j, "created");
  c.architecture = get_string(j, "architecture");
  c.os = get_string(j, "os");
  c.variant = get_string(j, "variant");
  if (auto it = j.find("config"); it != j.end() && it->is_object()) {
    const json& rc = *it;
    c.config.user = get_string(rc, "User");
    c.config.env = get_strings(rc, "Env").value_or(std::vector<std::string>{});
    c.config.entrypoint = get_strings(rc, "Entrypoint");
    c.config.cmd = get_strings(rc, "Cmd");
    c.config.working_dir = get_string(rc, "WorkingDir");
    for (auto& [k, v] : get_map(rc, "Labels")) {
      c.config.labels[k] = v;
    }
    if (auto p = rc.find("ExposedPorts"); p != rc.end() && p->is_object()) {
      for (auto& [k, v] : p->items()) {
        c.config.exposed_ports.push_back(k);
      }
    }
    c.config.stop_signal = get_string(rc, "StopSignal");
  }
  // Wrong JSON types are refusals naming the field, never nlohmann's type_error (found
  // by fuzz_oci_json).
  if (auto it = j.find("rootfs"); it != j.end() && it->is_object()) {
    if (auto ids = it->find("diff_ids"); ids != it->end()) {
      if (!ids->is_array()) {
        throw bad("rootfs.diff_ids must be an array");
      }
      for (const auto& d : *ids) {
        if (!d.is_string()) {
          throw bad("rootfs.diff_ids holds a " + std::string(d.type_name()) + ", not a digest string");
        }
        c.diff_ids.push_back(Digest::parse(d.get<std::string>()));
      }
    }
  }
  if (auto it = j.find("history"); it != j.end() && it->is_array()) {
    for (const auto& h : *it) {
      if (!h.is_object()) {
        throw bad("a history entry must be an object, not a " + std::string(h.type_name()));
      }
      HistoryEntry e;
      e.created = get_string(h, "created");
      e.created_by = get_string(h, "created_by");
      e.comment = get_string(h, "comment");
      auto empty = h.find("empty_layer");
      e.empty_layer = empty != h.end() && empty->is_boolean() && empty->get<bool>();
      c.history.push_back(e);
    }
  }
  return c;
}

std::string canonical(const json& j) {
  return j.dump();
}

json parse_json(const std::string& text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw util::Error(util::ErrorKind::input, what + " is not valid JSON: " + e.what());
  }
}

std::string compression_name(Compression c) {
  switch (c) {
  case Compression::gzip:
    return "gzip";
  case Compression::zstd:
    return "zstd";
  case Compression::none:
    return "none";
  }
  return "none";
}

std::optional<Compression> parse_compression(const std::string& name) {
  for (Compression c : {Compression::gzip, Compression::zstd, Compression::none}) {
    if (compression_name(c) == name) {
      return c;
    }
  }
  return std::nullopt;
}

int default_level(Compression c) {
  return c == Compression::gzip ? 6 : c == Compression::zstd ? 3 : 0;
}

int max_level(Compression c) {
  return c == Compression::gzip ? 9 : c == Compression::zstd ? 19 : 0;
}

} // namespace oci
