// Creating maps and loading programs from a ProgramImage (see bpf_object.h).
#include "runtime/load/bpf_object.h"

#include <bcc/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/load/map_precreation.h"

namespace bpfql {

namespace {

// Without a log buffer libbcc loads once and, on a rejection, again with one, printing
// "bpf: Failed to load program: ..." and the log to stderr: the text verifier_log.h reads.
int load_program(uint32_t type, const std::string& name, const std::string& code,
                 const std::string& license, uint32_t kern_version) {
  errno = 0;
  return bcc_prog_load(static_cast<bpf_prog_type>(type), name.c_str(),
                       reinterpret_cast<const bpf_insn*>(code.data()),
                       static_cast<int>(code.size()), license.c_str(), kern_version, 0, nullptr,
                       0);
}

int load_btf(const std::string& btf) {
  union bpf_attr attr{};
  attr.btf = reinterpret_cast<uint64_t>(btf.data());
  attr.btf_size = static_cast<uint32_t>(btf.size());
  return static_cast<int>(syscall(__NR_bpf, BPF_BTF_LOAD, &attr, sizeof attr));
}

}  // namespace

int create_map(const ImageMap& m, int btf_fd) {
  bcc_create_map_attr attr{};
  attr.name = m.name.c_str();
  attr.map_type = static_cast<bpf_map_type>(m.type);
  attr.map_flags = m.flags;
  attr.key_size = m.key_size;
  attr.value_size = m.value_size;
  attr.max_entries = m.max_entries;
  if (m.btf_key_type_id || m.btf_value_type_id) {
    attr.btf_fd = static_cast<uint32_t>(btf_fd);
    attr.btf_key_type_id = m.btf_key_type_id;
    attr.btf_value_type_id = m.btf_value_type_id;
  }
  errno = 0;
  // Raises RLIMIT_MEMLOCK when an old kernel charges maps to it, as libbcc does.
  return bcc_create_map_xattr(&attr, true);
}

BpfObject::~BpfObject() {
  for (int fd : fds())
    if (fd >= 0) close(fd);
  if (btf_fd_ >= 0) close(btf_fd_);
}

std::expected<std::unique_ptr<BpfObject>, BpfObject::Failure> BpfObject::load(
    const ProgramImage& image, MapPrecreation* precreated) {
  auto object = std::make_unique<BpfObject>();
  if (!image.btf.empty()) {
    object->btf_fd_ = load_btf(image.btf);
    if (object->btf_fd_ < 0)
      return std::unexpected(Failure{"", std::string("cannot load the program's BTF: ") +
                                             std::strerror(errno)});
  }
  std::vector<int> map_fds;
  for (const auto& m : image.maps) {
    int fd = precreated ? precreated->take(m) : -1;
    if (fd < 0) fd = create_map(m, object->btf_fd_);
    if (fd < 0)
      return std::unexpected(
          Failure{"", "cannot create map " + m.name + ": " + std::strerror(errno)});
    object->maps_[m.name] = Map{fd, m};
    map_fds.push_back(fd);
  }
  object->license_ = image.license;
  object->kern_version_ = image.kern_version;
  for (const auto& f : image.functions) {
    std::string code = with_map_fds(f, map_fds);
    int fd = load_program(f.prog_type, f.name, code, image.license, image.kern_version);
    if (fd < 0) return std::unexpected(Failure{f.name, std::strerror(errno)});
    object->programs_[f.name] = Program{fd, f.prog_type, std::move(code)};
  }
  return object;
}

int BpfObject::reload_as(const std::string& function, uint32_t prog_type) {
  auto it = programs_.find(function);
  if (it == programs_.end()) {
    errno = ENOENT;
    return -1;
  }
  Program& p = it->second;
  int fd = load_program(prog_type, function, p.code, license_, kern_version_);
  if (fd < 0) return -1;
  close(p.fd);
  p.fd = fd;
  p.type = prog_type;
  return fd;
}

int BpfObject::map_fd(const std::string& name) const {
  auto it = maps_.find(name);
  return it == maps_.end() ? -1 : it->second.fd;
}

int BpfObject::program_fd(const std::string& function) const {
  auto it = programs_.find(function);
  return it == programs_.end() ? -1 : it->second.fd;
}

uint32_t BpfObject::program_type(const std::string& function) const {
  auto it = programs_.find(function);
  return it == programs_.end() ? 0 : it->second.type;
}

std::vector<int> BpfObject::fds() const {
  std::vector<int> out;
  for (const auto& [name, m] : maps_) out.push_back(m.fd);
  for (const auto& [name, p] : programs_) out.push_back(p.fd);
  return out;
}

}  // namespace bpfql
