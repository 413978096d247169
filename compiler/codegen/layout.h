// Generated structs whose every byte is accounted for: members at explicit offsets with explicit
// padding arrays between them, declared packed and 8-byte aligned so the compiler adds nothing of
// its own (and still knows the alignment), plus a _Static_assert that pins the layout the runtime
// decodes from the Plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bpfql::codegen {

// "u8".."u64", "s8".."s64" for 1/2/4/8 bytes.
std::string c_int_type(int bytes, bool is_signed);

struct CMember {
  std::string name;    // C member name (validated by the caller)
  std::string type;    // "u32", "char", "struct q0_key"
  uint32_t array = 0;  // > 0: declared as name[array]
  uint32_t offset = 0;
  uint32_t size = 0;
  std::string comment;  // query text, made comment-safe when emitted
  bool padding = false;
};

class StructLayout {
 public:
  StructLayout() = default;
  explicit StructLayout(std::string tag) : tag_(std::move(tag)) {}

  // Appends a member at the next multiple of `align`, padding before it; returns its offset.
  uint32_t append(std::string name, std::string type, uint32_t array, uint32_t size, uint32_t align,
                  std::string comment = "");
  // Places a member at `offset` (tracepoint records). False when it would overlap the previous one.
  bool place(std::string name, std::string type, uint32_t array, uint32_t offset, uint32_t size,
             std::string comment = "");
  // Pads the end to a multiple of `n`.
  void pad_to_multiple(uint32_t n);

  const std::string& tag() const { return tag_; }  // "q0_key": declared as `struct q0_key`
  std::string type() const { return "struct " + tag_; }
  uint32_t size() const { return size_; }
  bool empty() const { return members_.empty(); }
  const std::vector<CMember>& members() const { return members_; }
  // The member called `name`; nullptr if there is none.
  const CMember* find(const std::string& name) const;

  // The declaration followed by its _Static_assert (sizeof and every member's offset).
  std::string declaration() const;

 private:
  void pad_to(uint32_t offset);

  std::string tag_;
  std::vector<CMember> members_;
  uint32_t size_ = 0;
  int pads_ = 0;
};

}  // namespace bpfql::codegen
