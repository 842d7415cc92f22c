#pragma once
// The remote sources of files and data layers (a copy rule's `url:` with its sha256):
// each file fetched once into the layer cache, keyed by its SHA-256 (another spec
// naming the same hash downloads nothing), checked while it streams, and laid out in
// the cache as the rule copies it: the file under its name, or the archive extracted
// (layers/extract.hpp), once per hash and extraction. The layer's copy rules then read
// it like any directory on this machine.
#include "builder/layer_build.hpp"
#include "spec/sources_lock.hpp"

#include <nlohmann/json.hpp>

namespace builder {

// Whether a files or data layer has a rule with `url:` or `git:`; whether any layer of the spec has.
bool has_remote_sources(const spec::LayerSpec& l);
bool spec_has_remote_sources(const spec::BuildSpec& s);

// The layer with each remote rule's `from` set to its file or tree in the cache
// (downloaded or extracted now when missing). `report` receives one object per
// remote rule: {url (redacted), sha256, size, extract, to, downloaded}, or for a git
// source {git (redacted), commit, to, downloaded}. Throws
// util::Error(integrity) on a size or hash mismatch (naming the URL and both digests;
// nothing is kept) and for an archive member that would land outside its target.
spec::LayerSpec with_remote_sources(const spec::LayerSpec& l, const LayerContext& cx, nlohmann::json& report);

// Refuses a spec with a remote source that neither the spec nor its sources lock pins
// (Error(input) naming the rule's file:line and the lock command): a build fetches
// nothing it cannot check.
void check_sources_pinned(const spec::BuildSpec& s);

// `paddle-image lock --sources`: each remote source the spec leaves open, pinned. A
// download is fetched once and hashed as it streams (and kept in the cache, so the
// build that follows sends no request); a git ref is resolved with git ls-remote. Pins
// already in the lock are kept unless `update`; those the spec no longer names are
// dropped; the spec's own pins are never written. The text is not written yet.
struct SourcesLockResult {
  spec::SourcesLock lock;
  std::string text;
  std::filesystem::path file;
  nlohmann::json entries; // one per source: {origin, layer, url|git, sha256+size+downloaded | ref+commit+resolved}
};
SourcesLockResult lock_sources(const spec::BuildSpec& s, const BuildOptions& o, bool update, const Events& ev);

} // namespace builder
