// Resource limits and missing privileges, told apart from a program the kernel refuses: an
// EMFILE, EPERM or ENOMEM while creating maps, loading programs or attaching says nothing about
// the program (a cached one stays cached, no second compiler runs) and has its own remedy.
#pragma once

#include <string>
#include <string_view>

namespace bpfql {

// What `err` means when it is a resource limit or a missing privilege (EMFILE, ENFILE, ENOMEM,
// EPERM), with what to do about it; "" for any other errno. `doing` starts the message: "cannot
// create map q0_vals", "cannot attach tracepoint:...".
std::string resource_problem(int err, std::string_view doing);

// Raises the soft limit on open files to the hard one (as bpftrace does): each probe, program
// and map is a file descriptor, and `tracepoint:*:*` attaches hundreds. Returns the new soft
// limit.
unsigned long raise_open_file_limit();

}  // namespace bpfql
