// Whole reads and writes on the compile helpers' pipes (compile_child.h), EINTR retried.
#pragma once

#include <string>
#include <string_view>

namespace bpfql {

// Everything until end of file (or an error: what came before it).
std::string read_all(int fd);
// False when the bytes could not all be written.
bool write_all(int fd, std::string_view bytes);

}  // namespace bpfql
