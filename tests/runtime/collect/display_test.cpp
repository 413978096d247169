// Display functions: syscall, errno, user, ksym, usym, probe names and IP addresses.
#include "runtime/collect/display.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/collect/byte_text.h"
#include "compiler/syscall_names.h"

using namespace bpfql;

extern "C" __attribute__((noinline)) int bpfql_display_test_marker(int x) {
  return x * 3 + static_cast<int>(getpid() & 1);
}

TEST_CASE("syscall(): x86_64 numbers to names") {
#if defined(__x86_64__)
  CHECK(std::get<std::string>(apply_display(Display::Syscall, uint64_t{39}, -1)) == "getpid");
  CHECK(std::get<std::string>(apply_display(Display::Syscall, int64_t{110}, -1)) == "getppid");
  CHECK(syscall_display(0) == "read");
  CHECK(syscall_display(257) == "openat");
  CHECK(syscall_display(435) == "clone3");
  CHECK(syscall_table_size() > 370);
#endif
  CHECK(syscall_display(100000) == "syscall_100000");
  CHECK(syscall_display(-1) == "syscall_-1");
}

TEST_CASE("errno(): negative values to names, others as their number in text (a column of text)") {
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{-2}, -1)) == "ENOENT");
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{-11}, -1)) == "EAGAIN");
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{-512}, -1)) == "ERESTARTSYS");
  // A long return value that reached us as unsigned bits.
  CHECK(std::get<std::string>(apply_display(Display::Errno, uint64_t(-13), -1)) == "EACCES");
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{0}, -1)) == "0");
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{42}, -1)) == "42");
  CHECK(std::get<std::string>(apply_display(Display::Errno, int64_t{-100000}, -1)) == "-100000");
  CHECK(std::get<std::string>(apply_display(Display::Errno, uint64_t{7}, -1)) == "7");
  CHECK(errno_name(2) == "ENOENT");
  CHECK_FALSE(errno_name(0));
}

TEST_CASE("user(): uid to name, unknown uid as its number") {
  CHECK(std::get<std::string>(apply_display(Display::User, uint64_t{0}, -1)) == "root");
  CHECK(user_display(3999999999u) == "3999999999");
}

TEST_CASE("probe: index to the probe's name when names are given") {
  std::vector<std::string> names{"tracepoint:a:b", "tracepoint:c:d"};
  CHECK(std::get<std::string>(apply_display(Display::Probe, uint64_t{1}, -1, names)) ==
        "tracepoint:c:d");
  CHECK(std::get<uint64_t>(apply_display(Display::Probe, uint64_t{5}, -1, names)) == 5);
  CHECK(std::get<uint64_t>(apply_display(Display::Probe, uint64_t{1}, -1)) == 1);
}

TEST_CASE("ipv4/ipv6: byte arrays to addresses; integers and other displays unchanged") {
  Cell v4 = BytesValue{{192, 168, 1, 20}};
  Cell v6 = BytesValue{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  auto shown = [](const Cell& c) { return std::get<BytesValue>(c).shown; };
  Cell a4 = apply_display(Display::Ipv4, v4, -1);
  CHECK(shown(a4) == BytesValue::Shown::Ipv4);
  CHECK(std::get<BytesValue>(a4).bytes == std::get<BytesValue>(v4).bytes);  // still the bytes
  CHECK(bytes_text(std::get<BytesValue>(a4)) == "192.168.1.20");
  CHECK(bytes_text(std::get<BytesValue>(apply_display(Display::Ipv6, v6, -1))) == "::1");
  CHECK(shown(apply_display(Display::None, v4, -1)) == BytesValue::Shown::Hex);
  CHECK(shown(apply_display(Display::Syscall, v4, -1)) == BytesValue::Shown::Hex);
  CHECK(bytes_text(std::get<BytesValue>(v4)) == "c0a80114");
  CHECK(std::get<uint64_t>(apply_display(Display::Ipv4, uint64_t{7}, -1)) == 7);
}

TEST_CASE("non-integer cells and Display::None pass through") {
  CHECK(std::get<std::string>(apply_display(Display::Syscall, std::string("x"), -1)) == "x");
  CHECK(std::get<uint64_t>(apply_display(Display::None, uint64_t{39}, -1)) == 39);
}

TEST_CASE("ksym(): a real kernel address from /proc/kallsyms") {
  std::ifstream in("/proc/kallsyms");
  std::string line;
  uint64_t addr = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string hex, type, name;
    fields >> hex >> type >> name;
    if (name == "vfs_read" && (type == "T" || type == "t")) {
      addr = std::stoull(hex, nullptr, 16);
      break;
    }
  }
  if (addr == 0) {
    MESSAGE("skipped: /proc/kallsyms is unreadable or hides addresses");
    CHECK(ksym_name(0xffffffff81000000ull) == "0xffffffff81000000");
    return;
  }
  CHECK(ksym_name(addr) == "vfs_read");
  CHECK(ksym_name(addr + 0x10) == "vfs_read+0x10");
  CHECK(ksym_name(addr + 0x10, false) == "vfs_read");
  CHECK(std::get<std::string>(apply_display(Display::Ksym, uint64_t{addr}, -1)) == "vfs_read");
  CHECK(ksym_name(0x1000) == "0x1000");  // below every kernel symbol
}

TEST_CASE("usym(): an address in this process, through libbcc's symbol cache") {
  auto addr = reinterpret_cast<uint64_t>(&bpfql_display_test_marker);
  CHECK(usym_name(addr, getpid()) == "bpfql_display_test_marker");
  CHECK(usym_name(addr + 1, getpid()) == "bpfql_display_test_marker+0x1");
  CHECK(std::get<std::string>(apply_display(Display::Usym, uint64_t{addr}, getpid())) ==
        "bpfql_display_test_marker");
  CHECK(usym_name(0x10, getpid()) == "0x10");
  CHECK(usym_name(addr, 0x3fffffff) == usym_name(addr, -1));  // no such process: hex
  std::ostringstream hex;
  hex << "0x" << std::hex << addr;
  CHECK(usym_name(addr, -1) == hex.str());
}
