// Parses tracefs `events/CAT/NAME/format` text into a TracepointFormat. Pure text: reading the
// file is the catalog's job (runtime/ for the live kernel, tests/support/ for fixtures).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <span>

#include "compiler/check/catalog.h"
#include "compiler/check/print_fmt.h"
#include "compiler/text.h"

namespace bpfql {
namespace {

std::optional<int> to_int(std::string_view s) {
  s = trim(s);
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The words of a C type, with '*' as a word of its own: "const char *const" → const char * const.
std::vector<std::string_view> type_words(std::string_view type) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < type.size()) {
    if (type[i] == '*') {
      words.push_back(type.substr(i++, 1));
    } else if (is_ident_char(type[i])) {
      size_t start = i;
      while (i < type.size() && is_ident_char(type[i])) ++i;
      words.push_back(type.substr(start, i - start));
    } else {
      ++i;
    }
  }
  return words;
}

bool is_qualifier(std::string_view word) { return word == "const" || word == "volatile"; }

// "char", "const char": the element types whose arrays and pointers are strings.
bool is_plain_char(std::span<const std::string_view> words) {
  int chars = 0;
  for (std::string_view w : words) {
    if (w == "char")
      ++chars;
    else if (!is_qualifier(w))
      return false;
  }
  return chars == 1;
}

// "__u8", "u8", "uint8_t", "unsigned char": the element types of byte arrays.
bool is_byte(std::span<const std::string_view> words) {
  std::string name;
  for (std::string_view w : words)
    if (!is_qualifier(w)) name += (name.empty() ? "" : " ") + std::string(w);
  return name == "__u8" || name == "u8" || name == "uint8_t" || name == "unsigned char";
}

struct IntType {
  int size;
  bool is_signed;
};

// The width and signedness of a declared integer type (x86-64, LP64): C's own names and the
// kernel's typedefs that syscall arguments use. nullopt for anything else (enums, other typedefs).
std::optional<IntType> declared_int_type(std::span<const std::string_view> words) {
  std::string name;
  for (std::string_view w : words) {
    if (is_qualifier(w) || (w == "int" && !name.empty())) continue;  // "unsigned int" = "unsigned"
    name += (name.empty() ? "" : " ") + std::string(w);
  }
  static const std::map<std::string, IntType, std::less<>> kTypes = {
      {"char", {1, true}}, {"signed char", {1, true}}, {"unsigned char", {1, false}},
      {"short", {2, true}}, {"signed short", {2, true}}, {"unsigned short", {2, false}},
      {"int", {4, true}}, {"signed", {4, true}}, {"unsigned", {4, false}},
      {"long", {8, true}}, {"signed long", {8, true}}, {"unsigned long", {8, false}},
      {"long long", {8, true}}, {"unsigned long long", {8, false}},
      {"s8", {1, true}}, {"u8", {1, false}}, {"__s8", {1, true}}, {"__u8", {1, false}},
      {"s16", {2, true}}, {"u16", {2, false}}, {"__s16", {2, true}}, {"__u16", {2, false}},
      {"s32", {4, true}}, {"u32", {4, false}}, {"__s32", {4, true}}, {"__u32", {4, false}},
      {"s64", {8, true}}, {"u64", {8, false}}, {"__s64", {8, true}}, {"__u64", {8, false}},
      {"pid_t", {4, true}}, {"uid_t", {4, false}}, {"gid_t", {4, false}},
      {"qid_t", {4, false}}, {"umode_t", {2, false}}, {"mode_t", {4, false}},
      {"clockid_t", {4, true}}, {"key_serial_t", {4, true}}, {"mqd_t", {4, true}},
      {"rwf_t", {4, true}}, {"key_t", {4, true}}, {"timer_t", {4, true}},
      {"off_t", {8, true}}, {"loff_t", {8, true}}, {"size_t", {8, false}},
      {"ssize_t", {8, true}}, {"time_t", {8, true}}, {"bool", {1, false}}, {"_Bool", {1, false}},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// Fills kind (and array_len) from the declared type; `type` excludes the name, `array` is the
// "[N]" after the name or empty.
void classify(TracepointField& field, std::string_view type, std::string_view array) {
  std::vector<std::string_view> words = type_words(type);
  if (!words.empty() && (words[0] == "__data_loc" || words[0] == "__rel_loc")) {
    // __rel_loc offsets count from the field's end: not the layout DataLoc promises.
    bool dyn_string = words[0] == "__data_loc" && type.ends_with("[]") &&
                      is_plain_char(std::span(words).subspan(1));
    field.kind = dyn_string ? FieldKind::DataLoc : FieldKind::Other;
    return;
  }
  if (!array.empty()) {
    std::optional<int> len = to_int(array.substr(1, array.size() - 2));
    if (is_plain_char(words) && field.size > 0) {
      field.kind = FieldKind::CharArray;
      field.array_len = len.value_or(field.size);
    } else if (is_byte(words) && field.size > 0 && len.value_or(field.size) == field.size) {
      field.kind = FieldKind::ByteArray;
      field.array_len = field.size;
    } else {
      field.kind = FieldKind::Other;
    }
    return;
  }
  auto star = std::find(words.begin(), words.end(), "*");
  if (star != words.end()) {
    bool one_level = std::count(words.begin(), words.end(), "*") == 1 &&
                     std::all_of(star + 1, words.end(), is_qualifier);
    field.is_signed = false;  // a pointer is an address: an unsigned number
    // Only `const char *` is a string to read (spec §4): a plain `char *` is usually a buffer
    // the call fills (read's buf, getcwd's), whose bytes at entry are whatever was there before;
    // it stays an address, and str() reads it where the user knows it holds a string.
    bool read_only = std::find(words.begin(), star, "const") != star;
    if (one_level && read_only && is_plain_char(std::span(words.begin(), star)))
      field.kind = FieldKind::CharPtr;
    else
      field.kind = (field.size == 4 || field.size == 8) ? FieldKind::Integer : FieldKind::Other;
    return;
  }
  bool aggregate = !words.empty() && (words[0] == "struct" || words[0] == "union");
  bool scalar_size = field.size == 1 || field.size == 2 || field.size == 4 || field.size == 8;
  field.kind = (!aggregate && scalar_size) ? FieldKind::Integer : FieldKind::Other;
  if (field.kind != FieldKind::Integer) return;
  if (auto declared = declared_int_type(words); declared && declared->size < field.size) {
    field.value_size = declared->size;  // the low bytes of the slot (little-endian)
    field.value_signed = declared->is_signed;
  }
}

// Splits "const char * filename" / "char comm[16]" / "__data_loc char[] name" into type, name
// and array suffix. Returns an error text, or "" on success.
std::string split_declaration(std::string_view decl, TracepointField& field, std::string_view& type,
                              std::string_view& array) {
  decl = trim(decl);
  array = {};
  if (decl.ends_with(']')) {
    size_t open = decl.rfind('[');
    if (open == std::string_view::npos) return fmt::format("unbalanced '[' in '{}'", decl);
    std::string_view before = trim(decl.substr(0, open));
    // "__data_loc char[] name" has its brackets in the type; "char comm[16]" after the name.
    if (!before.empty() && is_ident_char(before.back())) {
      array = decl.substr(open);
      decl = before;
    }
  }
  size_t start = decl.size();
  while (start > 0 && is_ident_char(decl[start - 1])) --start;
  std::string_view name = decl.substr(start);
  type = trim(decl.substr(0, start));
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return fmt::format("no field name in '{}'", decl);
  if (type.empty()) return fmt::format("no type for field '{}'", name);
  field.name = std::string(name);
  field.c_type = std::string(type) + std::string(array);
  return "";
}

// Parses "field:DECL;\toffset:N;\tsize:N;\tsigned:N;". Returns an error text, or "".
std::string parse_field_line(std::string_view line, TracepointField& field) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start < line.size();) {
    size_t semi = line.find(';', start);
    if (semi == std::string_view::npos) semi = line.size();
    std::string_view part = trim(line.substr(start, semi - start));
    if (!part.empty()) parts.push_back(part);
    start = semi + 1;
  }
  std::string_view decl = parts.empty() ? "" : parts[0].substr(std::string_view("field:").size());
  std::optional<int> offset, size, is_signed;
  for (size_t i = 1; i < parts.size(); ++i) {
    size_t colon = parts[i].find(':');
    std::string_view key = trim(parts[i].substr(0, colon));
    std::optional<int> value =
        colon == std::string_view::npos ? std::nullopt : to_int(parts[i].substr(colon + 1));
    if (!value) return fmt::format("expected 'KEY:NUMBER' but found '{}'", parts[i]);
    if (key == "offset")
      offset = value;
    else if (key == "size")
      size = value;
    else if (key == "signed")
      is_signed = value;
  }
  if (!offset || !size) return fmt::format("expected 'offset:N;' and 'size:N;' in '{}'", line);
  if (*offset < 0 || *size < 0) return fmt::format("negative offset or size in '{}'", line);
  field.offset = *offset;
  field.size = *size;
  field.is_signed = is_signed.value_or(0) != 0;  // kernels before 2.6.32 had no signed:
  std::string_view type, array;
  std::string problem = split_declaration(decl, field, type, array);
  if (!problem.empty()) return problem;
  classify(field, type, array);
  return "";
}

// The print fmt says which byte arrays the kernel prints as IP addresses.
void apply_print_fmt(std::string_view print_fmt, TracepointFormat& format) {
  for (const PrintedArgument& printed : parse_print_fmt(print_fmt)) {
    std::string name = printed_field(printed.argument);
    auto field = std::find_if(format.fields.begin(), format.fields.end(),
                              [&](const TracepointField& f) { return f.name == name; });
    if (field == format.fields.end() || field->kind != FieldKind::ByteArray) continue;
    const std::string& c = printed.conversion;
    if (c.starts_with("pI4") && field->size == 4)
      field->byte_format = ByteFormat::Ipv4;
    else if (c.starts_with("pI6") && field->size == 16)
      field->byte_format = ByteFormat::Ipv6;
  }
}

}  // namespace

const TracepointField* TracepointFormat::field(std::string_view field_name) const {
  for (const TracepointField& f : fields)
    if (f.name == field_name) return &f;
  return nullptr;
}

std::vector<std::string> TracepointFormat::field_names() const {
  std::vector<std::string> names;
  for (const TracepointField& f : fields)
    if (!f.is_common()) names.push_back(f.name);
  return names;
}

int TracepointFormat::record_size() const {
  int end = 0;
  for (const TracepointField& f : fields) end = std::max(end, f.offset + f.size);
  return end;
}

Result<TracepointFormat> parse_tracepoint_format(std::string_view category, std::string_view name,
                                                 std::string_view text) {
  TracepointFormat format{std::string(category), std::string(name), 0, {}};
  auto fail = [&](int line_no, std::string_view why) {
    std::string where = line_no > 0 ? fmt::format("line {}: ", line_no) : "";
    return error_at({}, fmt::format("malformed format file for tracepoint {}:{}: {}{}", category,
                                    name, where, why));
  };
  bool have_id = false, in_format = false;
  int line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = trim(text.substr(start, nl - start));
    start = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line.starts_with("print fmt:")) {  // the printk format: the last line, not layout
      apply_print_fmt(line.substr(std::string_view("print fmt:").size()), format);
      break;
    }
    if (line.starts_with("ID:")) {
      std::optional<int> id = to_int(line.substr(3));
      if (!id) return fail(line_no, fmt::format("expected a number after 'ID:' in '{}'", line));
      format.id = *id;
      have_id = true;
    } else if (line == "format:") {
      in_format = true;
    } else if (line.starts_with("field:")) {
      if (!in_format) return fail(line_no, "'field:' before the 'format:' line");
      TracepointField field;
      std::string problem = parse_field_line(line, field);
      if (!problem.empty()) return fail(line_no, problem);
      if (format.field(field.name)) return fail(line_no, "duplicate field '" + field.name + "'");
      format.fields.push_back(std::move(field));
    } else if (in_format) {
      return fail(line_no, fmt::format("expected 'field:' or 'print fmt:' but found '{}'", line));
    }
    // Other header lines ("name: x") carry nothing the layout needs.
  }
  if (!have_id) return fail(0, "no 'ID:' line");
  if (format.fields.empty()) return fail(0, "no 'field:' lines");
  return format;
}

}  // namespace bpfql
