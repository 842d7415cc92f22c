#include "warm/manifests.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace warm {

using templates::k8s::Object;
using util::Error;
using util::ErrorKind;

ManifestKind parse_manifest_kind(const std::string& text, const std::string& flag) {
  static const std::vector<std::string> names = {"daemonset", "imagepulljob", "imagecache"};
  if (text == "daemonset") {
    return ManifestKind::daemonset;
  }
  if (text == "imagepulljob") {
    return ManifestKind::imagepulljob;
  }
  if (text == "imagecache") {
    return ManifestKind::imagecache;
  }
  std::string near = util::closest(text, names);
  throw Error(ErrorKind::usage, flag + ": '" + text + "' is not a kind",
              (near.empty() ? std::string() : "did you mean '" + near + "'? ") +
                  "daemonset (plain Kubernetes), imagepulljob (OpenKruise), imagecache (kube-fledged)");
}

double parse_bandwidth(const std::string& text, const std::string& flag) {
  std::string t = text;
  if (t.size() > 2 && t.substr(t.size() - 2) == "/s") {
    t.resize(t.size() - 2);
  }
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(t, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = t.substr(pos);
  static const std::vector<std::pair<std::string, double>> units = {{"", 1},
                                                                    {"B", 1},
                                                                    {"K", 1e3},
                                                                    {"KB", 1e3},
                                                                    {"M", 1e6},
                                                                    {"MB", 1e6},
                                                                    {"G", 1e9},
                                                                    {"GB", 1e9},
                                                                    {"KiB", 1024.0},
                                                                    {"MiB", 1024.0 * 1024},
                                                                    {"GiB", 1024.0 * 1024 * 1024}};
  auto it = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == unit; });
  if (pos == 0 || it == units.end() || !(v > 0) || !std::isfinite(v)) {
    throw Error(ErrorKind::usage, flag + ": '" + text + "' is not a bandwidth", "e.g. 50MB/s, 1GB/s or 800MiB/s");
  }
  return v * it->second;
}

std::int64_t pull_timeout_seconds(std::int64_t bytes, double bytes_per_second) {
  double t = std::ceil(3.0 * static_cast<double>(bytes) / bytes_per_second);
  return std::max<std::int64_t>(600, static_cast<std::int64_t>(t));
}

namespace {

Object labels_of(const std::string& name) {
  return Object{{"app.kubernetes.io/name", name}, {"app.kubernetes.io/managed-by", "paddle-image"}};
}

Object metadata(const std::string& name, const std::string& ns) {
  Object m{{"name", name}};
  if (!ns.empty()) {
    m["namespace"] = ns;
  }
  m["labels"] = labels_of(name);
  return m;
}

Object selector_map(const std::vector<std::pair<std::string, std::string>>& sel) {
  Object o = Object::object();
  for (const auto& [k, v] : sel) {
    o[k] = v;
  }
  return o;
}

Object secrets_of(const std::vector<std::string>& names) {
  Object out = Object::array();
  for (const auto& n : names) {
    out.push_back(Object{{"name", n}});
  }
  return out;
}

// "warm-0-ocr" from "host/team/ocr@sha256:...": a DNS-1123 label, unique by its index.
std::string container_name(std::size_t i, const std::string& pinned) {
  std::string repo = pinned.substr(0, pinned.find('@'));
  repo = repo.substr(repo.rfind('/') + 1);
  std::string clean;
  for (char c : repo) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    clean += (std::isalnum(static_cast<unsigned char>(l)) != 0) ? l : '-';
  }
  std::string name = "warm-" + std::to_string(i) + "-" + clean;
  name = name.substr(0, 63);
  while (!name.empty() && name.back() == '-') {
    name.pop_back();
  }
  return name;
}

void check(const ManifestsInput& in) {
  if (in.images.empty()) {
    throw Error(ErrorKind::usage, "warm manifests needs at least one IMAGE");
  }
  for (const auto& im : in.images) {
    if (im.pinned.find("@sha256:") == std::string::npos) {
      throw Error(ErrorKind::internal, im.given + " reached the renderer without a digest");
    }
  }
  if (!templates::k8s::dns1123_subdomain(in.name) || in.name.size() > 52) {
    throw Error(ErrorKind::usage, "--name '" + in.name + "' is not a Kubernetes object name",
                "lower-case letters, digits and '-', at most 52 characters (an index is appended per image)");
  }
  if (!in.ns.empty() && !templates::k8s::dns1123_label(in.ns)) {
    throw Error(ErrorKind::usage, "--namespace '" + in.ns + "' is not a namespace name",
                "lower-case letters, digits and '-', at most 63 characters");
  }
  if (in.kruise_api != "v1alpha1" && in.kruise_api != "v1beta1") {
    throw Error(ErrorKind::usage, "--kruise-api '" + in.kruise_api + "' is not an OpenKruise API version",
                "v1alpha1 (the default) or v1beta1");
  }
  if (in.command.empty()) {
    throw Error(ErrorKind::usage, "--command is empty",
                "e.g. --command /bin/true, or --command '[\"python3\", \"-c\", \"pass\"]'");
  }
  for (const auto& s : in.pull_secrets) {
    if (!templates::k8s::dns1123_subdomain(s)) {
      throw Error(ErrorKind::usage, "--pull-secret '" + s + "' is not a Secret name");
    }
  }
}

// The DaemonSet's pod: one init container per image that pulls it and exits, then a
// pause container that keeps the images in use.
Object daemonset_pod_spec(const ManifestsInput& in) {
  Object spec = Object::object();
  if (!in.node_selector.empty()) {
    spec["nodeSelector"] = selector_map(in.node_selector);
  }
  if (!in.tolerations.empty()) {
    spec["tolerations"] = templates::k8s::tolerations_of(in.tolerations);
  }
  if (!in.pull_secrets.empty()) {
    spec["imagePullSecrets"] = secrets_of(in.pull_secrets);
  }
  spec["automountServiceAccountToken"] = false;
  spec["terminationGracePeriodSeconds"] = 1;
  Object inits = Object::array();
  for (std::size_t i = 0; i < in.images.size(); ++i) {
    inits.push_back(Object{
        {"name", container_name(i, in.images[i].pinned)},
        {"image", in.images[i].pinned},
        {"imagePullPolicy", "IfNotPresent"},
        {"command", in.command},
        {"resources",
         {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}, {"limits", {{"cpu", "100m"}, {"memory", "64Mi"}}}}}});
  }
  spec["initContainers"] = inits;
  spec["containers"] = Object::array(
      {Object{{"name", "pause"},
              {"image", in.pause_image},
              {"imagePullPolicy", "IfNotPresent"},
              {"resources",
               {{"requests", {{"cpu", "1m"}, {"memory", "8Mi"}}}, {"limits", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}});
  return spec;
}

// --kind daemonset: plain Kubernetes.
void render_daemonset(const ManifestsInput& in, Rendered& r) {
  if (in.pause_image.find("@sha256:") == std::string::npos) {
    throw Error(ErrorKind::internal, "the pause image reached the renderer without a digest");
  }
  Object spec = daemonset_pod_spec(in);
  Object sel{{"app.kubernetes.io/name", in.name}};
  r.docs.push_back(
      Object{{"apiVersion", "apps/v1"},
             {"kind", "DaemonSet"},
             {"metadata", metadata(in.name, in.ns)},
             {"spec",
              {{"selector", {{"matchLabels", sel}}},
               {"updateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", "100%"}}}}},
               {"template", {{"metadata", {{"labels", labels_of(in.name)}}}, {"spec", spec}}}}}});
  r.notes.push_back("a DaemonSet has no pull deadline of its own: the kubelet pulls until done; its running "
                    "pause pod keeps the images in use, so the kubelet's image garbage collection leaves them "
                    "alone");
}

// --kind imagepulljob: one OpenKruise ImagePullJob per image, each with its own timeout.
void render_imagepulljobs(const ManifestsInput& in, Rendered& r) {
  for (std::size_t i = 0; i < in.images.size(); ++i) {
    const WarmImage& im = in.images[i];
    std::int64_t timeout = pull_timeout_seconds(im.bytes, in.bandwidth);
    Object spec{{"image", im.pinned}};
    if (!in.node_selector.empty()) {
      spec["selector"] = {{"matchLabels", selector_map(in.node_selector)}};
    }
    spec["pullPolicy"] = {{"timeoutSeconds", timeout}, {"backoffLimit", 3}};
    spec["completionPolicy"] = {{"type", "Always"}, {"ttlSecondsAfterFinished", 86400}};
    if (!in.pull_secrets.empty()) {
      spec["pullSecrets"] = in.pull_secrets;
    }
    std::string name = in.images.size() == 1 ? in.name : in.name + "-" + std::to_string(i);
    r.docs.push_back(Object{{"apiVersion", "apps.kruise.io/" + in.kruise_api},
                            {"kind", "ImagePullJob"},
                            {"metadata", metadata(name, in.ns)},
                            {"spec", spec}});
  }
  if (!in.tolerations.empty()) {
    r.notes.push_back("ImagePullJob has no tolerations: kruise-daemon pulls on each node, so it is the daemon's "
                      "DaemonSet that must tolerate the GPU nodes' taints (the --toleration flags are not used)");
  }
  r.notes.push_back("pullPolicy.timeoutSeconds is max(600, 3 x size / bandwidth) per image");
}

// --kind imagecache: one kube-fledged ImageCache of all the images (r.timeout_seconds set).
void render_imagecache(const ManifestsInput& in, Rendered& r) {
  Object images = Object::array();
  for (const auto& im : in.images) {
    images.push_back(im.pinned);
  }
  Object entry{{"images", images}};
  if (!in.node_selector.empty()) {
    entry["nodeSelector"] = selector_map(in.node_selector);
  }
  Object spec{{"cacheSpec", Object::array({entry})}};
  if (!in.pull_secrets.empty()) {
    spec["imagePullSecrets"] = secrets_of(in.pull_secrets);
  }
  Object meta = metadata(in.name, in.ns);
  meta["labels"]["app"] = "kubefledged";
  meta["labels"]["kubefledged"] = "imagecache";
  r.docs.push_back(
      Object{{"apiVersion", "kubefledged.io/v1alpha2"}, {"kind", "ImageCache"}, {"metadata", meta}, {"spec", spec}});
  r.notes.push_back("kube-fledged's ImageCache has no per-cache pull deadline: start its controller with "
                    "--image-pull-deadline-duration=" +
                    std::to_string(r.timeout_seconds) +
                    "s, max(600, 3 x size / bandwidth) for the largest image (its default, 5m, is too short for "
                    "multi-GB GPU images)");
  if (!in.tolerations.empty()) {
    r.notes.push_back("ImageCache has no tolerations: kube-fledged's pull jobs must be allowed onto tainted GPU "
                      "nodes by its own configuration (the --toleration flags are not used)");
  }
}

} // namespace

Rendered render_manifests(const ManifestsInput& in) {
  check(in);
  Rendered r;
  std::int64_t largest = 0;
  for (const auto& im : in.images) {
    largest = std::max(largest, im.bytes);
  }
  r.timeout_seconds = pull_timeout_seconds(largest, in.bandwidth);
  switch (in.kind) {
  case ManifestKind::daemonset:
    render_daemonset(in, r);
    break;
  case ManifestKind::imagepulljob:
    render_imagepulljobs(in, r);
    break;
  case ManifestKind::imagecache:
    render_imagecache(in, r);
    break;
  }
  return r;
}

std::vector<std::string> parse_command(const std::string& text) {
  if (!text.empty() && text.front() == '[') {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    std::vector<std::string> out;
    if (j.is_array() && !j.empty() &&
        std::all_of(j.begin(), j.end(), [](const nlohmann::json& e) { return e.is_string(); })) {
      for (const auto& e : j) {
        out.push_back(e.get<std::string>());
      }
      return out;
    }
    throw Error(ErrorKind::usage, "--command '" + text + "' is not a JSON array of strings",
                "e.g. --command '[\"python3\", \"-c\", \"pass\"]' or --command /bin/true");
  }
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    out.push_back(w);
  }
  return out;
}

std::int64_t pull_bytes(const oci::Image& img, const oci::CopyOptions& opt) {
  oci::ManifestBlob m = oci::select_platform(img, opt);
  std::int64_t n = static_cast<std::int64_t>(m.bytes.size());
  for (const auto& d : oci::image_blobs(m, img.name())) {
    n += d.size;
  }
  return n;
}

std::string manifests_header(const ManifestsInput& in, const Rendered& r, const std::string& kind,
                             const std::string& bandwidth) {
  std::string header = "paddle-image warm manifests --kind " + kind + "\nimages (pinned by digest):\n";
  for (const auto& im : in.images) {
    header += "  " + im.pinned + "\n";
  }
  if (!in.pause_image.empty()) {
    header += "pause image (pinned by digest): " + in.pause_image + "\n";
  }
  header += "pull timeout for the largest image: " + std::to_string(r.timeout_seconds) + " s (max(600, 3 x size / " +
            bandwidth + "))\n";
  for (const auto& n : r.notes) {
    header += "note: " + n + "\n";
  }
  return header;
}

nlohmann::json to_json(const ManifestsInput& in, const Rendered& r, const std::string& kind, const std::string& file) {
  nlohmann::json images = nlohmann::json::array();
  for (const auto& im : in.images) {
    images.push_back({{"image", im.given}, {"pinned", im.pinned}, {"bytes", im.bytes}});
  }
  nlohmann::json docs = nlohmann::json::array();
  for (const auto& d : r.docs) {
    docs.push_back(nlohmann::json::parse(d.dump()));
  }
  return {{"kind", kind},
          {"images", images},
          {"pause_image", in.pause_image},
          {"timeout_seconds", r.timeout_seconds},
          {"notes", r.notes},
          {"documents", docs},
          {"file", file}};
}

} // namespace warm
