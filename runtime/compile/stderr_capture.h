// libbcc and LLVM write compiler errors, verifier logs and "sha1 socket not available" noise
// straight to fd 2. While loading and attaching, fd 2 goes to a memory file instead; the session
// replays it only with -v or when something failed.
#pragma once

#include <string>
#include <string_view>

namespace bpfql {

class StderrCapture {
 public:
  StderrCapture();   // starts capturing (fd 2 → a memfd); does nothing if that fails
  ~StderrCapture();  // stops, discarding what was captured unless finish() took it
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores fd 2 and returns everything written to it meanwhile.
  std::string finish();

 private:
  int saved_fd_ = -1;
  int capture_fd_ = -1;
};

// The captured text without libbcc's harmless per-program noise (sha1 socket, prog tag).
std::string without_libbcc_noise(std::string_view text);

}  // namespace bpfql
