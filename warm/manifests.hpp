#pragma once
// `warm manifests`: Kubernetes objects that pull images onto GPU nodes before the
// training pods arrive, pinned by digest: a DaemonSet (one init container per image
// running a trivial command, pause as the main container, maxUnavailable 100%), an
// OpenKruise ImagePullJob per image, or a kube-fledged ImageCache. Built as data and
// emitted through templates/k8s (the one place Kubernetes YAML comes from).
#include "oci/image.hpp"
#include "templates/k8s.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace warm {

enum class ManifestKind { daemonset, imagepulljob, imagecache };
// "daemonset", "imagepulljob", "imagecache"; a usage error naming `flag` otherwise.
ManifestKind parse_manifest_kind(const std::string& text, const std::string& flag);

// "50MB/s", "50M", "1.5GB/s", "800MiB/s" (decimal K/M/G, binary Ki/Mi/Gi; "/s" optional)
// as bytes per second; a usage error naming `flag` otherwise.
double parse_bandwidth(const std::string& text, const std::string& flag);
// max(600, 3 x bytes / bandwidth), in whole seconds: OpenKruise's default is 600 s, and
// three times the transfer time leaves room for decompression and a slow node.
std::int64_t pull_timeout_seconds(std::int64_t bytes, double bytes_per_second);

struct WarmImage {
  std::string pinned;     // "host/repo@sha256:..."
  std::string given;      // as the user wrote it
  std::int64_t bytes = 0; // manifest, config and layers of the platform's image
};

struct ManifestsInput {
  ManifestKind kind = ManifestKind::daemonset;
  std::vector<WarmImage> images;
  std::string name = "paddle-image-warm";
  std::string ns; // "" for none
  std::vector<std::pair<std::string, std::string>> node_selector;
  std::vector<templates::k8s::Toleration> tolerations;
  std::string pause_image;                                      // pinned (daemonset)
  std::vector<std::string> command = {"/bin/sh", "-c", "true"}; // in each init container
  std::string kruise_api = "v1alpha1";                          // or v1beta1
  double bandwidth = 50e6;                                      // bytes per second
  std::vector<std::string> pull_secrets;
};

struct Rendered {
  std::vector<templates::k8s::Object> docs;
  std::vector<std::string> notes;   // what the objects cannot express, with the fix
  std::int64_t timeout_seconds = 0; // for the largest image
};

// Checks the input (usage errors name the flag) and builds the objects.
Rendered render_manifests(const ManifestsInput& in);

// `--command`: a JSON array of strings (text starting with '['; anything else so
// written is a usage error), or words split at spaces.
std::vector<std::string> parse_command(const std::string& text);
// What a node pulls for an image, in bytes: the manifest of the platform `opt` selects,
// its config and its layers.
std::int64_t pull_bytes(const oci::Image& img, const oci::CopyOptions& opt);
// The comment at the head of the YAML: the command line's kind (`kind` as given), the
// pinned images and pause image, the pull timeout with the bandwidth as given, the notes.
std::string manifests_header(const ManifestsInput& in, const Rendered& r, const std::string& kind,
                             const std::string& bandwidth);
// The JSON report: kind as given, the images as given and pinned, the pause image, the
// timeout, the notes, the objects, and the file written ("" for stdout).
nlohmann::json to_json(const ManifestsInput& in, const Rendered& r, const std::string& kind, const std::string& file);

} // namespace warm
