// The kernel objects of a loaded Plan, owned by the session's process as plain fds: the maps
// (created here from a ProgramImage, not by libbcc) and one verified program per attached
// function. Everything after loading (attach, map reads, perf buffers, stacks, detach) works
// from these fds; no compiler runs in this process (see compile_child.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compile/program_image.h"

namespace bpfql {

class MapPrecreation;

// Creates one map (with `btf_fd` when it has BTF types); the fd, or -1 with errno.
int create_map(const ImageMap& m, int btf_fd);

class BpfObject {
 public:
  BpfObject() = default;
  ~BpfObject();  // closes every fd
  BpfObject(const BpfObject&) = delete;
  BpfObject& operator=(const BpfObject&) = delete;

  struct Failure {
    std::string function;  // "" when a map could not be created
    std::string message;   // strerror, or what failed
  };
  // Creates the maps and loads every function (the verifier runs here). libbcc's loader
  // prints the verifier log of a rejected program on stderr: capture it around this call.
  // Maps created ahead with the same attributes are taken from `precreated` instead.
  static std::expected<std::unique_ptr<BpfObject>, Failure> load(
      const ProgramImage& image, MapPrecreation* precreated = nullptr);

  // -1 when the program has no such map / function.
  int map_fd(const std::string& name) const;
  int program_fd(const std::string& function) const;
  // The bpf_prog_type the function was loaded as (0: no such function).
  uint32_t program_type(const std::string& function) const;
  // Loads the function again as another program type, in place of the loaded one (whose fd is
  // closed); returns the new fd, or -1 with errno. For a raw tracepoint program whose
  // tracepoint turns out to have no raw tracepoint (see attach.h).
  int reload_as(const std::string& function, uint32_t prog_type);
  // Every fd this object holds (maps, then programs).
  std::vector<int> fds() const;

 private:
  struct Map {
    int fd = -1;
    ImageMap info;
  };
  struct Program {
    int fd = -1;
    uint32_t type = 0;
    std::string code;  // with this object's map fds, for reload_as
  };
  std::map<std::string, Map> maps_;
  std::map<std::string, Program> programs_;
  std::string license_;
  uint32_t kern_version_ = 0;
  int btf_fd_ = -1;  // the maps' BTF, when a map type needs it
};

}  // namespace bpfql
