// libFuzzer target for the package index pages a mirror serves: PEP 503 HTML (and flat
// find-links pages) and PEP 691 JSON. The first byte picks the form. Every file a page
// yields must have a URL and a file name, and must resolve against the page.
#include "python/index.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string in(fuzz::text(data + 1, size - 1));
  const std::string page = "https://mirror.example/simple/paddlepaddle-gpu/";
  fuzz::refusal_ok([&] {
    auto files = (data[0] & 1) != 0 ? python::parse_json_page(in, page) : python::parse_html_page(in, page);
    for (const auto& f : files) {
      (void)python::resolve_url(page, f.url);
    }
  });
  return 0;
}
