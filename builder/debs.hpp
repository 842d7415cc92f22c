#pragma once
// What `paddle-image lock` and the debs layer share: the layer's request (packages,
// repositories, architecture) as debian:: sees it, the dpkg status a debs layer lands on,
// the fetcher for apt repositories (the package index client's HTTP stack: TLS rules,
// proxies, retries, netrc), and the lock itself.
#include "builder/build.hpp"
#include "debian/lock.hpp"
#include "python/index.hpp"

#include <memory>

namespace builder {

// dpkg's name for the spec's platform: amd64, arm64.
std::string dpkg_architecture(const oci::Platform& p);
debian::Request debs_request(const spec::BuildSpec& s, const spec::LayerSpec& l);
// The dpkg status of what a layer lands on ("" when the tree has none). Error(input)
// naming `where` when the tree has one too large to read.
std::string landing_dpkg_status(const layers::BaseView& view, const std::string& where);

// An index client for the layer's repositories and a fetcher over it.
struct DebsFetcher {
  registry::Stats stats;
  std::unique_ptr<python::PackageIndex> index;
  debian::Fetch fetch;
};
std::unique_ptr<DebsFetcher> debs_fetcher(const spec::LayerSpec& l, const BuildOptions& o);
// The same for any files on the hosts of `urls` (a files or data layer's remote sources).
std::unique_ptr<DebsFetcher> url_fetcher(const std::vector<std::string>& urls, const BuildOptions& o);

// `paddle-image lock` for a debs layer (`layer`, or the spec's only one): the
// repositories verified, apt's resolution against the base's dpkg status, the lock
// (not yet written) and where it goes.
struct DebsLockResult {
  debian::Lock lock;
  std::string text;
  std::filesystem::path file; // the layer's `lock`
  std::string layer;
};
DebsLockResult lock_debs(const spec::BuildSpec& s, const std::string& layer, const BuildOptions& o, const Events& ev);

// The debs layer a lock request names (nullptr when the spec's layer of that name, or
// its only lockable layer, is not one): `lock` then locks wheels.
const spec::LayerSpec* debs_layer_named(const spec::BuildSpec& s, const std::string& layer);

} // namespace builder
