#pragma once
// The upload session of one blob (OCI distribution "pushing blobs"): POST opens a
// session; then either one streaming PUT (monolithic) or PATCHes of chunks with
// Content-Range and a closing PUT (chunked: when ClientOptions::chunk_size is set or
// the registry, or a proxy, refused a big body with 413, which also shrinks a chunk
// it refuses). A chunk that fails is resumed after the bytes the registry
// acknowledges (GET of the session, its Range header); a session that is lost starts
// over in a new one. All retries go through Session::retry. Stopped by a signal, it
// DELETEs its open session.
#include "oci/image.hpp"
#include "registry/session.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace registry {

// What a registry taught about uploads, kept for its later blobs.
struct UploadHints {
  std::atomic<bool> chunked{false};       // it refused a whole body (413): chunks from now on
  std::atomic<std::int64_t> chunk_min{0}; // OCI-Chunk-Min-Length
  void note_chunk_min(const Response& r); // from a response's header, if any
};

class Upload {
public:
  // Lives for one upload: session, hints, blob, open and progress must outlive it.
  Upload(Session& session, UploadHints& hints, const std::string& repo, const oci::Descriptor& blob,
         const oci::BlobOpener& open, const oci::Progress& progress);
  // Uploads the blob, starting over in new sessions while attempts remain; throws
  // util::Error (a RegistryError when the registry refused it).
  void run();

private:
  // Why the last session failed.
  struct Failure {
    std::string message;
    std::optional<Response> response; // the last refusal (for Retry-After)
    int curl_code = 0;                // the last transport failure
  };
  enum class Put { stored, too_large, failed };

  bool attempt();      // one session, start to end; false: start again in a new one
  void open_session(); // POST .../blobs/uploads/
  Put put_whole();     // the monolithic PUT
  bool put_chunks();   // PATCHes from byte 0, resuming after faults
  Attempt send_chunks();
  bool resync(); // asks the registry how much it holds
  bool commit(); // the closing PUT of a chunked upload
  Response perform(const Request& q);
  void note_refusal(const Response& r);
  void note_failure(const TransportFailure& f);
  // Sends q; a retryable transport failure is noted and gives nullopt, another throws.
  std::optional<Response> send_noting(const Request& q);
  [[noreturn]] void give_up(int attempts) const;
  // DELETE of the open session (stopping on a signal).
  void cancel_session();

  Session& m_session;
  UploadHints& m_hints;
  const std::string& m_repo;
  const oci::Descriptor& m_blob;
  const oci::BlobOpener& m_open;
  const oci::Progress& m_progress;
  std::string m_scope;
  std::string m_location;    // the session's URL, as the registry last named it
  std::int64_t m_offset = 0; // bytes the registry holds (chunked)
  std::int64_t m_chunk = 0;  // the chunk size
  Failure m_failure;
};

} // namespace registry
