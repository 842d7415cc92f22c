#include "registry/upload.hpp"

#include "registry/error.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace registry {

using util::Error;
using util::ErrorKind;

namespace {

// "0-1234" -> 1235 (bytes the registry holds), -1 when absent or malformed.
// Distribution writes "0-0" for an empty upload, so that reads as 0.
std::int64_t range_end(const std::string& range) {
  auto dash = range.find('-');
  if (dash == std::string::npos) {
    return -1;
  }
  try {
    std::int64_t end = std::stoll(range.substr(dash + 1));
    return end == 0 ? 0 : end + 1;
  } catch (const std::exception&) {
    return -1; // not a number: as if absent
  }
}

// Wraps a reader: counts bytes, reports progress, and when the stream starts at 0,
// hashes it and checks size and digest at its end (the source must not change).
oci::Reader verifying(oci::Reader inner, const oci::Descriptor& d, std::int64_t offset, std::int64_t limit,
                      Stats& stats, const oci::Progress& progress, const std::string& host) {
  struct State {
    std::int64_t pos;
    std::int64_t sent = 0;
    std::int64_t last = 0;
    std::unique_ptr<util::Sha256> hash;
  };
  auto st = std::make_shared<State>();
  Stats* counters = &stats;
  st->pos = offset;
  if (offset == 0 && limit < 0) {
    st->hash = std::make_unique<util::Sha256>();
  }
  return [st, counters, inner, d, limit, progress, host](char* buf, std::size_t len) -> std::size_t {
    if (limit >= 0) {
      len = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(len), limit - st->sent));
      if (len == 0) {
        return 0;
      }
    }
    std::size_t n = inner(buf, len);
    if (n == 0 && limit >= 0 && st->sent < limit) {
      throw Error(ErrorKind::io, "the source of " + d.digest.str() + " ended early");
    }
    if (st->hash) {
      st->hash->update(buf, n);
    }
    st->pos += static_cast<std::int64_t>(n);
    st->sent += static_cast<std::int64_t>(n);
    counters->bytes_uploaded += static_cast<std::int64_t>(n);
    if (progress && (st->pos - st->last >= (1 << 20) || st->pos == d.size)) {
      st->last = st->pos;
      progress(d.digest, st->pos, d.size);
    }
    if (n == 0 && st->hash) {
      std::string got = st->hash->finish_hex();
      st->hash.reset();
      if (st->pos != d.size || got != d.digest.hex) {
        throw Error(ErrorKind::integrity,
                    "the local copy of " + d.digest.str() + " does not match its digest (read " +
                        std::to_string(st->pos) + " bytes hashing to sha256:" + got + "); upload to " + host +
                        " stopped",
                    "the blob changed or is corrupt; rebuild or pull the image again");
      }
    }
    return n;
  };
}

} // namespace

void UploadHints::note_chunk_min(const Response& r) {
  std::string min_hdr = r.headers.get("oci-chunk-min-length");
  if (!min_hdr.empty()) {
    chunk_min = std::max<std::int64_t>(chunk_min, std::atoll(min_hdr.c_str()));
  }
}

Upload::Upload(Session& session, UploadHints& hints, const std::string& repo, const oci::Descriptor& blob,
               const oci::BlobOpener& open, const oci::Progress& progress)
    : m_session(session), m_hints(hints), m_repo(repo), m_blob(blob), m_open(open), m_progress(progress),
      m_scope(push_scope(repo)) {}

void Upload::run() {
  int attempts = 0;
  bool stored = false;
  try {
    stored = m_session.transport().retry([&](int n) {
      attempts = n;
      m_failure = Failure{};
      if (attempt()) {
        return Attempt::finish();
      }
      return Attempt::retry("uploading " + m_blob.digest.str() + " again with a new session: " + m_failure.message,
                            m_failure.response);
    });
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::interrupted) {
      cancel_session();
    }
    throw;
  }
  if (!stored) {
    give_up(attempts);
  }
  ++m_session.stats().blobs_uploaded;
}

void Upload::cancel_session() {
  if (m_location.empty()) {
    return;
  }
  // Best effort, once, briefly: a session left open expires in the registry anyway.
  try {
    Request q;
    q.method = "DELETE";
    q.url = m_location;
    q.cleanup = true;
    Response r = perform(q);
    m_session.log(1, "cancelled the upload session of " + m_blob.digest.str() + " (HTTP " + std::to_string(r.status) +
                         ")");
  } catch (const std::exception& e) {
    m_session.log(1, "cancelling the upload session of " + m_blob.digest.str() + " failed (ignored): " + e.what());
  }
}

void Upload::give_up(int attempts) const {
  std::string where = "uploading " + m_blob.digest.str() + " to " + m_session.host() + "/" + m_repo;
  std::string tries = attempts == 1 ? "1 attempt" : std::to_string(attempts) + " attempts";
  if (m_failure.curl_code == 28) {
    throw Error(ErrorKind::network, where + ": timed out or stalled after " + tries + " (" + m_failure.message + ")",
                "check the network; --timeout sets how long a stalled transfer may wait");
  }
  std::string message = where + " failed after " + tries + ": " + m_failure.message;
  std::string hint = "check the network and the registry; --retries sets how often to try";
  if (m_failure.response) {
    const Response& r = *m_failure.response;
    throw RegistryError(r.status, parse_error_body(r.body).codes, message, hint);
  }
  throw Error(ErrorKind::network, message, hint);
}

bool Upload::attempt() {
  open_session();
  if (!m_hints.chunked && m_session.options().chunk_size == 0) {
    switch (put_whole()) {
    case Put::stored:
      return true;
    case Put::failed:
      return false;
    case Put::too_large:
      open_session(); // chunks from now on, in a new session
      break;
    }
  }
  return put_chunks() && commit();
}

void Upload::open_session() {
  Response start = m_session.send(
      [&] {
        Request q;
        q.method = "POST";
        q.url = m_session.base_url() + "/v2/" + m_repo + "/blobs/uploads/";
        return q;
      },
      m_scope, "starting the upload of " + m_blob.digest.str() + " to " + m_repo, {202});
  m_location = m_session.absolute(start.headers.get("location"));
  m_hints.note_chunk_min(start);
}

Response Upload::perform(const Request& q) {
  return m_session.perform_once(q, m_scope);
}

void Upload::note_refusal(const Response& r) {
  m_failure.response = r;
  if (r.status == 401) {
    m_session.log(1, m_session.host() + " refused the token for " + m_scope + " (401); getting a new one");
    m_session.forget_token(m_scope);
  }
}

void Upload::note_failure(const TransportFailure& f) {
  m_failure.message = f.what();
  m_failure.curl_code = f.curl_code;
}

std::optional<Response> Upload::send_noting(const Request& q) {
  try {
    return perform(q);
  } catch (const TransportFailure& f) {
    if (!f.retryable) {
      m_session.fail_transport(f, "uploading " + m_blob.digest.str());
    }
    note_failure(f);
    return std::nullopt;
  }
}

Upload::Put Upload::put_whole() {
  Request q;
  q.method = "PUT";
  q.url = util::with_query(m_location, "digest=" + util::percent_encode(m_blob.digest.str()));
  q.headers.push_back("Content-Type: application/octet-stream");
  q.reader = verifying(m_open(0), m_blob, 0, -1, m_session.stats(), m_progress, m_session.host());
  q.body_size = m_blob.size;
  std::optional<Response> sent = send_noting(q);
  if (!sent) {
    return Put::failed;
  }
  const Response& r = *sent;
  if (r.status == 201) {
    return Put::stored;
  }
  if (r.status == 413) {
    // A proxy or the registry refuses big bodies: chunks from now on.
    m_hints.chunked = true;
    m_hints.note_chunk_min(r);
    m_session.log(1, m_session.host() + " refused a " + std::to_string(m_blob.size) +
                         "-byte body (413); uploading in chunks");
    return Put::too_large;
  }
  note_refusal(r);
  if (retryable_status(r.status) || r.status == 401 || r.status == 404) {
    m_failure.message = "HTTP " + std::to_string(r.status) + " " + error_summary(r);
    return Put::failed;
  }
  m_session.fail_status(r, "uploading " + m_blob.digest.str() + " to " + m_repo, m_scope);
}

bool Upload::put_chunks() {
  std::int64_t chunk = m_session.options().chunk_size > 0 ? m_session.options().chunk_size : 8 << 20;
  m_chunk = std::max<std::int64_t>(chunk, m_hints.chunk_min);
  m_offset = 0;
  return m_session.transport().retry([&](int n) {
    if (n > 1 && !resync()) {
      return Attempt::abandon(); // the session is gone: start a new one
    }
    return send_chunks();
  });
}

// PATCHes the chunks from m_offset on; a fault is retried (after a resync).
Attempt Upload::send_chunks() {
  while (m_offset < m_blob.size) {
    std::int64_t len = std::min(m_chunk, m_blob.size - m_offset);
    Request q;
    q.method = "PATCH";
    q.url = m_location;
    q.headers.push_back("Content-Type: application/octet-stream");
    q.headers.push_back("Content-Range: " + std::to_string(m_offset) + "-" + std::to_string(m_offset + len - 1));
    q.reader = verifying(m_open(m_offset), m_blob, m_offset, len, m_session.stats(), m_progress, m_session.host());
    q.body_size = len;
    std::optional<Response> sent = send_noting(q);
    if (!sent) {
      return Attempt::retry("uploading " + m_blob.digest.str() + ": " + m_failure.message);
    }
    const Response& r = *sent;
    if (r.status == 202) {
      std::string next = r.headers.get("location");
      if (!next.empty()) {
        m_location = m_session.absolute(next);
      }
      std::int64_t have = range_end(r.headers.get("range"));
      m_offset = have > 0 ? have : m_offset + len;
      continue;
    }
    std::int64_t chunk_min = m_hints.chunk_min;
    if (r.status == 413 && len > (1 << 20) && len > chunk_min) {
      m_chunk = std::max<std::int64_t>({len / 4, std::int64_t{1} << 20, chunk_min});
      m_session.log(1, m_session.host() + " refused a " + std::to_string(len) + "-byte chunk; trying " +
                           std::to_string(m_chunk));
      continue;
    }
    note_refusal(r);
    if (!retryable_status(r.status) && r.status != 401 && r.status != 416 && r.status != 404) {
      m_session.fail_status(r, "uploading " + m_blob.digest.str() + " to " + m_repo, m_scope);
    }
    m_failure.message = "HTTP " + std::to_string(r.status) + " " + error_summary(r);
    return Attempt::retry("uploading " + m_blob.digest.str() + ": " + m_failure.message, r);
  }
  return Attempt::finish();
}

bool Upload::resync() {
  Request q;
  q.url = m_location;
  try {
    Response r = perform(q);
    if (r.status == 204 || r.status == 202) {
      std::int64_t have = range_end(r.headers.get("range"));
      m_offset = have < 0 ? 0 : have;
      std::string next = r.headers.get("location");
      if (!next.empty()) {
        m_location = m_session.absolute(next);
      }
      m_session.log(1, "resuming the upload of " + m_blob.digest.str() + " after byte " + std::to_string(m_offset) +
                           " acknowledged by " + m_session.host());
      return true;
    }
    note_refusal(r);
    m_failure.message = "upload session lost (HTTP " + std::to_string(r.status) + ")";
  } catch (const TransportFailure& f) {
    note_failure(f);
  }
  return false;
}

bool Upload::commit() {
  Request q;
  q.method = "PUT";
  q.url = util::with_query(m_location, "digest=" + util::percent_encode(m_blob.digest.str()));
  q.headers.push_back("Content-Type: application/octet-stream");
  q.body_size = 0;
  try {
    Response r = perform(q);
    if (r.status == 201) {
      return true;
    }
    note_refusal(r);
    if (!retryable_status(r.status) && r.status != 401 && r.status != 404) {
      m_session.fail_status(r, "completing the upload of " + m_blob.digest.str(), m_scope);
    }
    m_failure.message = "HTTP " + std::to_string(r.status);
  } catch (const TransportFailure& f) {
    note_failure(f);
  }
  return false;
}

} // namespace registry
