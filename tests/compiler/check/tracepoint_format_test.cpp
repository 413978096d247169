// parse_tracepoint_format on real tracefs text (kernel 6.18) and on broken text.
#include <doctest/doctest.h>

#include "compiler/check/catalog.h"

using namespace bpfql;

namespace {

const char* kOpenat = R"fmt(name: sys_enter_openat
ID: 782
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:int flags;	offset:32;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;

print fmt: "dfd: 0x%08lx, filename: 0x%08lx, flags: 0x%08lx, mode: 0x%08lx", ((unsigned long)(REC->dfd)), ((unsigned long)(REC->filename)), ((unsigned long)(REC->flags)), ((unsigned long)(REC->mode))
)fmt";

const char* kSchedSwitch = R"fmt(name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid
)fmt";

const char* kProcessExec = R"fmt(name: sched_process_exec
ID: 365
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
	field:pid_t pid;	offset:12;	size:4;	signed:1;
	field:pid_t old_pid;	offset:16;	size:4;	signed:1;

print fmt: "filename=%s pid=%d old_pid=%d", __get_str(filename), REC->pid, REC->old_pid
)fmt";

const char* kRawSysEnter = R"fmt(name: sys_enter
ID: 443
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:unsigned long args[6];	offset:16;	size:48;	signed:0;

print fmt: "NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]
)fmt";

TracepointFormat parse_ok(std::string_view cat, std::string_view name, std::string_view text) {
  Result<TracepointFormat> format = parse_tracepoint_format(cat, name, text);
  REQUIRE_MESSAGE(format.has_value(), (format ? "" : format.error().message));
  return *format;
}

// A one-field format, to look at how a single declaration is classified.
TracepointField one_field(const std::string& declaration, int size, int is_signed = 0) {
  std::string text = "ID: 1\nformat:\n\tfield:" + declaration +
                     ";\toffset:8;\tsize:" + std::to_string(size) +
                     ";\tsigned:" + std::to_string(is_signed) + ";\n";
  TracepointFormat format = parse_ok("test", "one", text);
  REQUIRE(format.fields.size() == 1);
  return format.fields[0];
}

std::string parse_error(std::string_view text) {
  Result<TracepointFormat> format = parse_tracepoint_format("syscalls", "sys_enter_openat", text);
  REQUIRE_MESSAGE(!format.has_value(), "expected a parse error for:\n" << text);
  CHECK(format.error().loc.line == 0);
  return format.error().message;
}

}  // namespace

TEST_CASE("syscall format: id, common fields, char pointer and widened int arguments") {
  TracepointFormat f = parse_ok("syscalls", "sys_enter_openat", kOpenat);
  CHECK(f.category == "syscalls");
  CHECK(f.name == "sys_enter_openat");
  CHECK(f.id == 782);
  CHECK(f.fields.size() == 9);
  CHECK(f.field_names() ==
        std::vector<std::string>{"__syscall_nr", "dfd", "filename", "flags", "mode"});
  CHECK(f.record_size() == 48);

  const TracepointField* pid = f.field("common_pid");
  REQUIRE(pid);
  CHECK(pid->is_common());
  CHECK(pid->offset == 4);
  CHECK(pid->is_signed);

  const TracepointField* nr = f.field("__syscall_nr");
  REQUIRE(nr);
  CHECK(nr->kind == FieldKind::Integer);
  CHECK(nr->c_type == "int");
  CHECK(nr->offset == 8);
  CHECK(nr->size == 4);
  CHECK(nr->is_signed);

  // Syscall arguments are stored as 8-byte words whatever the declared type says.
  const TracepointField* dfd = f.field("dfd");
  REQUIRE(dfd);
  CHECK(dfd->kind == FieldKind::Integer);
  CHECK(dfd->c_type == "int");
  CHECK(dfd->size == 8);
  CHECK_FALSE(dfd->is_signed);
  // ... but hold the declared type in their low bytes: AT_FDCWD is -100.
  CHECK(dfd->value_bytes() == 4);
  CHECK(dfd->value_is_signed());
  CHECK(nr->value_bytes() == 4);  // a declared type as wide as its slot: the slot's own
  CHECK(nr->value_size == 0);

  const TracepointField* filename = f.field("filename");
  REQUIRE(filename);
  CHECK(filename->kind == FieldKind::CharPtr);
  CHECK(filename->c_type == "const char *");
  CHECK(filename->offset == 24);
  CHECK(filename->size == 8);
  CHECK_FALSE(filename->is_signed);

  CHECK(f.field("mode")->c_type == "umode_t");
  CHECK(f.field("mode")->value_bytes() == 2);
  CHECK_FALSE(f.field("mode")->value_is_signed());
  CHECK(f.field("filname") == nullptr);
}

TEST_CASE("char arrays, signed scalars and the record size") {
  TracepointFormat f = parse_ok("sched", "sched_switch", kSchedSwitch);
  CHECK(f.id == 372);
  const TracepointField* comm = f.field("prev_comm");
  REQUIRE(comm);
  CHECK(comm->kind == FieldKind::CharArray);
  CHECK(comm->array_len == 16);
  CHECK(comm->c_type == "char[16]");
  CHECK(comm->offset == 8);
  CHECK(comm->size == 16);

  const TracepointField* state = f.field("prev_state");
  REQUIRE(state);
  CHECK(state->kind == FieldKind::Integer);
  CHECK(state->size == 8);
  CHECK(state->is_signed);

  CHECK(f.field("next_pid")->c_type == "pid_t");
  CHECK(f.field("next_pid")->kind == FieldKind::Integer);
  CHECK(f.record_size() == 64);
}

TEST_CASE("__data_loc char[] is a DataLoc field") {
  TracepointFormat f = parse_ok("sched", "sched_process_exec", kProcessExec);
  const TracepointField* filename = f.field("filename");
  REQUIRE(filename);
  CHECK(filename->kind == FieldKind::DataLoc);
  CHECK(filename->c_type == "__data_loc char[]");
  CHECK(filename->offset == 8);
  CHECK(filename->size == 4);
  CHECK(f.field_names() == std::vector<std::string>{"filename", "pid", "old_pid"});
}

TEST_CASE("arrays of anything but char and unsigned bytes are Other") {
  TracepointFormat f = parse_ok("raw_syscalls", "sys_enter", kRawSysEnter);
  const TracepointField* args = f.field("args");
  REQUIRE(args);
  CHECK(args->kind == FieldKind::Other);
  CHECK(args->c_type == "unsigned long[6]");
  CHECK(args->size == 48);
  CHECK(f.field("id")->kind == FieldKind::Integer);
  CHECK(f.record_size() == 64);

  CHECK(one_field("s8 deltas[4]", 4, 1).kind == FieldKind::Other);
  CHECK(one_field("signed char x[4]", 4, 1).kind == FieldKind::Other);
  CHECK(one_field("bool flags[4]", 4).kind == FieldKind::Other);
  CHECK(one_field("__u16 ports[2]", 4).kind == FieldKind::Other);
  CHECK(one_field("u8 odd[4]", 3).kind == FieldKind::Other);  // the size says otherwise
  CHECK(one_field("long args[3]", 24, 1).kind == FieldKind::Other);
  CHECK(one_field("char buf[]", 0).kind == FieldKind::Other);  // flexible array: no length
  CHECK(one_field("__data_loc cpumask_t cpumask", 4).kind == FieldKind::Other);
  CHECK(one_field("__data_loc u64[] stack", 4).kind == FieldKind::Other);
  CHECK(one_field("__rel_loc char[] name", 4).kind == FieldKind::Other);
}

TEST_CASE("arrays of unsigned bytes are ByteArray, whatever the typedef") {
  for (const char* decl : {"__u8 saddr[28]", "u8 fsid[28]", "unsigned char addr[28]",
                           "uint8_t key[28]", "const __u8 mac[28]"}) {
    CAPTURE(decl);
    TracepointField f = one_field(decl, 28);
    CHECK(f.kind == FieldKind::ByteArray);
    CHECK(f.array_len == 28);
    CHECK(f.byte_format == ByteFormat::Hex);
  }
  CHECK(one_field("__u8 saddr[28]", 28).c_type == "__u8[28]");
  CHECK(one_field("unsigned char addr[6]", 6).array_len == 6);
  CHECK(one_field("u8 empty[]", 0).kind == FieldKind::Other);  // flexible: no bytes of its own
}

TEST_CASE("the print fmt says which byte arrays are IP addresses: %pI4 and %pI6c") {
  // sock:inet_sock_set_state as this kernel has it (tests/fixtures/tracepoints/sock/...).
  std::string text = R"fmt(name: inet_sock_set_state
ID: 2287
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:const void * skaddr;	offset:8;	size:8;	signed:0;
	field:int oldstate;	offset:16;	size:4;	signed:1;
	field:int newstate;	offset:20;	size:4;	signed:1;
	field:__u16 sport;	offset:24;	size:2;	signed:0;
	field:__u16 dport;	offset:26;	size:2;	signed:0;
	field:__u16 family;	offset:28;	size:2;	signed:0;
	field:__u16 protocol;	offset:30;	size:2;	signed:0;
	field:__u8 saddr[4];	offset:32;	size:4;	signed:0;
	field:__u8 daddr[4];	offset:36;	size:4;	signed:0;
	field:__u8 saddr_v6[16];	offset:40;	size:16;	signed:0;
	field:__u8 daddr_v6[16];	offset:56;	size:16;	signed:0;

print fmt: "family=%s protocol=%s sport=%hu dport=%hu saddr=%pI4 daddr=%pI4 saddrv6=%pI6c daddrv6=%pI6c oldstate=%s newstate=%s", __print_symbolic(REC->family, { 2, "AF_INET" }, { 10, "AF_INET6" }), __print_symbolic(REC->protocol, { 6, "IPPROTO_TCP" }, { 132, "IPPROTO_SCTP" }, { 262, "IPPROTO_MPTCP" }), REC->sport, REC->dport, REC->saddr, REC->daddr, REC->saddr_v6, REC->daddr_v6, __print_symbolic(REC->oldstate, { 1, "TCP_ESTABLISHED" }), __print_symbolic(REC->newstate, { 1, "TCP_ESTABLISHED" })
)fmt";
  TracepointFormat f = parse_ok("sock", "inet_sock_set_state", text);
  for (const char* name : {"saddr", "daddr"}) {
    CAPTURE(name);
    REQUIRE(f.field(name));
    CHECK(f.field(name)->kind == FieldKind::ByteArray);
    CHECK(f.field(name)->array_len == 4);
    CHECK(f.field(name)->offset == (std::string(name) == "saddr" ? 32 : 36));
    CHECK(f.field(name)->byte_format == ByteFormat::Ipv4);
  }
  for (const char* name : {"saddr_v6", "daddr_v6"}) {
    CAPTURE(name);
    REQUIRE(f.field(name));
    CHECK(f.field(name)->array_len == 16);
    CHECK(f.field(name)->byte_format == ByteFormat::Ipv6);
  }
  CHECK(f.field("dport")->kind == FieldKind::Integer);

  // An address conversion on an array of the wrong length, or a sockaddr (%pISpc): hex.
  auto format_of = [](const std::string& decl, int size, const std::string& print) {
    std::string one = "ID: 1\nformat:\n\tfield:" + decl +
                      ";\toffset:8;\tsize:" + std::to_string(size) +
                      ";\tsigned:0;\n\nprint fmt: " + print + "\n";
    return parse_ok("test", "one", one).fields.at(0).byte_format;
  };
  CHECK(format_of("__u8 a[4]", 4, R"("%pI4", REC->a)") == ByteFormat::Ipv4);
  CHECK(format_of("__u8 a[16]", 16, R"("%pI6", REC->a)") == ByteFormat::Ipv6);
  CHECK(format_of("__u8 a[16]", 16, R"("%pI4", REC->a)") == ByteFormat::Hex);
  CHECK(format_of("__u8 a[4]", 4, R"("%pI6c", REC->a)") == ByteFormat::Hex);
  CHECK(format_of("__u8 a[28]", 28, R"("%pISpc", REC->a)") == ByteFormat::Hex);
  CHECK(format_of("__u8 a[4]", 4, R"("%pi4", REC->a)") == ByteFormat::Hex);  // no dots
  CHECK(format_of("__u8 a[4]", 4, R"("%s %pI4", "x", REC->b)") == ByteFormat::Hex);
}

TEST_CASE("only const char pointers are strings; other pointers are unsigned numbers") {
  for (const char* decl : {"const char * filename", "const char *const name",
                           "const char* pathname", "char const * name"}) {
    CAPTURE(decl);
    TracepointField f = one_field(decl, 8);
    CHECK(f.kind == FieldKind::CharPtr);
  }
  for (const char* decl :
       {"char * buf", "char *const buf", "void * ptr", "const void* ptr", "struct sockaddr * uservaddr",
        "const struct sockaddr * addr", "unsigned char * vec", "const char *const * argv",
        "struct iocb * * iocbpp", "void __seg_gs * ptr", "const void *const value"}) {
    CAPTURE(decl);
    TracepointField f = one_field(decl, 8, 1);
    CHECK(f.kind == FieldKind::Integer);
    CHECK_FALSE(f.is_signed);
    CHECK(f.size == 8);
  }
  CHECK(one_field("const char *const * argv", 8).c_type == "const char *const *");
  CHECK(one_field("const char *const * argv", 8).name == "argv");
}

TEST_CASE("scalars of 1, 2, 4 and 8 bytes are Integer whatever their typedef") {
  struct Case {
    const char* decl;
    int size;
    int is_signed;
  };
  for (Case c : {Case{"bool success", 1, 0}, Case{"u8 op", 1, 0}, Case{"s8 x", 1, 1},
                 Case{"unsigned short ioprio", 2, 0}, Case{"gfp_t gfp_flags", 4, 0},
                 Case{"enum skb_drop_reason reason", 4, 0}, Case{"dev_t dev", 4, 0},
                 Case{"size_t bytes_req", 8, 0}, Case{"loff_t pos", 8, 1}, Case{"u64 delay", 8, 0},
                 Case{"const clockid_t which_clock", 8, 0}}) {
    CAPTURE(c.decl);
    TracepointField f = one_field(c.decl, c.size, c.is_signed);
    CHECK(f.kind == FieldKind::Integer);
    CHECK(f.size == c.size);
    CHECK(f.is_signed == (c.is_signed != 0));
  }
  CHECK(one_field("enum skb_drop_reason reason", 4).c_type == "enum skb_drop_reason");
  CHECK(one_field("struct timespec64 ts", 16).kind == FieldKind::Other);
  CHECK(one_field("struct foo f", 8).kind == FieldKind::Other);
  CHECK(one_field("u8 odd", 3).kind == FieldKind::Other);
}

TEST_CASE("the print fmt line and header lines do not confuse the parser") {
  std::string text =
      "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"field:int b; offset:0;\", REC->a\n";
  TracepointFormat f = parse_ok("c", "x", text);
  CHECK(f.fields.size() == 1);
  CHECK(f.id == 7);

  std::string crlf = "ID: 8\r\nformat:\r\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\r\n";
  CHECK(parse_ok("c", "x", crlf).field("a")->size == 4);

  std::string no_signed = "ID: 9\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\n";
  CHECK_FALSE(parse_ok("c", "x", no_signed).field("a")->is_signed);
}

TEST_CASE("malformed format text is an error naming the tracepoint") {
  const std::string field = "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n";
  CHECK(parse_error("") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: no 'ID:' line");
  CHECK(parse_error("format:\n" + field) ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: no 'ID:' line");
  CHECK(parse_error("ID: 12\nformat:\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: no 'field:' lines");
  CHECK(parse_error("ID: twelve\nformat:\n" + field) ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 1: expected a "
        "number after 'ID:' in 'ID: twelve'");
  CHECK(parse_error("ID: 1\nformat:\n\tfield:int a;\tsize:4;\tsigned:1;\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 3: expected "
        "'offset:N;' and 'size:N;' in 'field:int a;\tsize:4;\tsigned:1;'");
  CHECK(parse_error("ID: 1\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 3: expected "
        "'KEY:NUMBER' but found 'offset:x'");
  CHECK(parse_error("ID: 1\nformat:\n\tfield:int;\toffset:8;\tsize:4;\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 3: no type for "
        "field 'int'");
  CHECK(parse_error("ID: 1\nformat:\n\tfield:int *;\toffset:8;\tsize:8;\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 3: no field name "
        "in 'int *'");
  CHECK(parse_error("ID: 1\nformat:\n" + field + field) ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 4: duplicate "
        "field 'a'");
  CHECK(parse_error("ID: 1\n" + field) ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 2: 'field:' before "
        "the 'format:' line");
  CHECK(parse_error("ID: 1\nformat:\n" + field + "garbage\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 4: expected "
        "'field:' or 'print fmt:' but found 'garbage'");
  CHECK(parse_error("ID: 1\nformat:\n\tfield:char name]16];\toffset:8;\tsize:16;\n") ==
        "malformed format file for tracepoint syscalls:sys_enter_openat: line 3: unbalanced '[' "
        "in 'char name]16]'");
}
