#include "compiler/codegen/layout.h"

#include <fmt/format.h>

#include "compiler/codegen/c_names.h"

namespace bpfql::codegen {

std::string c_int_type(int bytes, bool is_signed) {
  return fmt::format("{}{}", is_signed ? 's' : 'u', bytes * 8);
}

void StructLayout::pad_to(uint32_t offset) {
  if (offset <= size_) return;
  CMember pad;
  pad.name = fmt::format("__pad{}", pads_++);
  pad.type = "u8";
  pad.array = offset - size_;
  pad.offset = size_;
  pad.size = offset - size_;
  pad.padding = true;
  members_.push_back(std::move(pad));
  size_ = offset;
}

uint32_t StructLayout::append(std::string name, std::string type, uint32_t array, uint32_t size,
                              uint32_t align, std::string comment) {
  if (align == 0) align = 1;
  uint32_t offset = (size_ + align - 1) / align * align;
  place(std::move(name), std::move(type), array, offset, size, std::move(comment));
  return offset;
}

bool StructLayout::place(std::string name, std::string type, uint32_t array, uint32_t offset,
                         uint32_t size, std::string comment) {
  if (offset < size_) return false;
  pad_to(offset);
  members_.push_back(
      CMember{std::move(name), std::move(type), array, offset, size, std::move(comment), false});
  size_ = offset + size;
  return true;
}

const CMember* StructLayout::find(const std::string& name) const {
  for (const auto& m : members_)
    if (m.name == name) return &m;
  return nullptr;
}

void StructLayout::pad_to_multiple(uint32_t n) { pad_to((size_ + n - 1) / n * n); }

std::string StructLayout::declaration() const {
  std::string out = fmt::format("struct {} {{\n", tag_);
  for (const auto& m : members_) {
    std::string decl = m.array ? fmt::format("{} {}[{}];", m.type, m.name, m.array)
                               : fmt::format("{} {};", m.type, m.name);
    if (!m.comment.empty() && m.comment != m.name)
      decl = fmt::format("{:<24} /* {} */", decl, c_names::comment_text(m.comment));
    out += "  " + decl + "\n";
  }
  out += "} __attribute__((packed, aligned(8)));\n";
  // One assertion per struct: the size and each member's offset, as the Plan records them.
  std::string checks = fmt::format("sizeof(struct {}) == {}", tag_, size_);
  for (const auto& m : members_)
    if (!m.padding)
      checks += fmt::format(" &&\n               __builtin_offsetof(struct {}, {}) == {}", tag_,
                            m.name, m.offset);
  out +=
      fmt::format("_Static_assert({},\n               \"layout of struct {}\");\n", checks, tag_);
  return out;
}

}  // namespace bpfql::codegen
