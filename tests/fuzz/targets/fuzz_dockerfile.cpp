// libFuzzer target for `init --from-dockerfile`: the Dockerfile parser (continuations,
// comments, parser directives, heredocs, JSON-form arguments) and the mapping onto a
// spec. The spec written must itself parse as a spec.
#include "spec/spec.hpp"
#include "templates/from_dockerfile.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string in(fuzz::text(data, size));
  fuzz::refusal_ok([&] { (void)templates::parse_dockerfile(in, "Dockerfile"); });
  fuzz::refusal_ok([&] {
    auto out = templates::spec_from_dockerfile(in, "Dockerfile", "ctx");
    // The generated spec is YAML this tool reads back; a refusal there is fine (a
    // COPY source the spec rules refuse), a crash or stray exception is not.
    fuzz::refusal_ok([&] { (void)spec::parse(out.spec, "spec.yaml"); });
  });
  return 0;
}
