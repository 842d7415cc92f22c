#pragma once
// The remote sources of files and data layers (a copy rule's `url:` with its sha256):
// each file fetched once into the layer cache, keyed by its SHA-256 (another spec
// naming the same hash downloads nothing), checked while it streams, and laid out in
// the cache as the rule copies it: the file under its name, or the archive extracted
// (layers/extract.hpp), once per hash and extraction. The layer's copy rules then read
// it like any directory on this machine.
#include "builder/layer_build.hpp"

#include <nlohmann/json.hpp>

namespace builder {

// Whether a files or data layer has a rule with `url:`.
bool has_remote_sources(const spec::LayerSpec& l);

// The layer with each remote rule's `from` set to its file or tree in the cache
// (downloaded or extracted now when missing). `report` receives one object per
// remote rule: {url (redacted), sha256, size, extract, to, downloaded}, or for a git
// source {git (redacted), commit, to, downloaded}. Throws
// util::Error(integrity) on a size or hash mismatch (naming the URL and both digests;
// nothing is kept) and for an archive member that would land outside its target.
spec::LayerSpec with_remote_sources(const spec::LayerSpec& l, const LayerContext& cx, nlohmann::json& report);

} // namespace builder
