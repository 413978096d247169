#include "runtime/kernel/btf_subset.h"

#include <bpf/btf.h>

#include <map>
#include <memory>

#include <fmt/format.h>

namespace bpfql {
namespace {

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};

bool is_aggregate(const btf_type* t) { return btf_is_struct(t) || btf_is_union(t); }

// Which types of the source the subset keeps whole, and which structs it only declares.
class Selection {
 public:
  Selection(const btf* source, const std::set<std::string>& roots) : src_(source), roots_(roots) {}

  std::set<int> whole;
  std::set<int> declared_only;

  void visit(int id, bool through_pointer) {
    if (id == 0 || whole.count(id)) return;
    const btf_type* t = btf__type_by_id(src_, id);
    if (!t) return;
    if (through_pointer && is_aggregate(t) && t->name_off != 0 &&
        !roots_.count(btf__name_by_offset(src_, t->name_off))) {
      declared_only.insert(id);
      return;
    }
    whole.insert(id);
    switch (btf_kind(t)) {
      case BTF_KIND_PTR:
        visit(int(t->type), true);
        break;
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_CONST:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_RESTRICT:
      case BTF_KIND_TYPE_TAG:
        visit(int(t->type), through_pointer);
        break;
      case BTF_KIND_ARRAY:
        visit(int(btf_array(t)->type), through_pointer);
        visit(int(btf_array(t)->index_type), false);
        break;
      case BTF_KIND_STRUCT:
      case BTF_KIND_UNION: {
        const btf_member* m = btf_members(t);
        for (int i = 0; i < btf_vlen(t); ++i) visit(int(m[i].type), false);
        break;
      }
      case BTF_KIND_FUNC_PROTO: {
        visit(int(t->type), true);
        const btf_param* p = btf_params(t);
        for (int i = 0; i < btf_vlen(t); ++i) visit(int(p[i].type), true);
        break;
      }
      default:  // INT, ENUM, ENUM64, FLOAT, FWD: no type references
        break;
    }
  }

 private:
  const btf* src_;
  const std::set<std::string>& roots_;
};

// Rewrites every type id a copied type refers to, from source ids to subset ids.
bool remap_references(btf* dst, const std::map<int, int>& ids) {
  auto remap = [&](__u32& id) {
    if (id == 0) return true;
    auto it = ids.find(int(id));
    if (it == ids.end()) return false;
    id = __u32(it->second);
    return true;
  };
  for (__u32 id = 1; id < btf__type_cnt(dst); ++id) {
    auto* t = const_cast<btf_type*>(btf__type_by_id(dst, id));
    bool ok = true;
    switch (btf_kind(t)) {
      case BTF_KIND_PTR:
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_CONST:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_RESTRICT:
      case BTF_KIND_TYPE_TAG:
        ok = remap(t->type);
        break;
      case BTF_KIND_ARRAY:
        ok = remap(btf_array(t)->type) && remap(btf_array(t)->index_type);
        break;
      case BTF_KIND_STRUCT:
      case BTF_KIND_UNION: {
        btf_member* m = btf_members(t);
        for (int i = 0; ok && i < btf_vlen(t); ++i) ok = remap(m[i].type);
        break;
      }
      case BTF_KIND_FUNC_PROTO: {
        ok = remap(t->type);
        btf_param* p = btf_params(t);
        for (int i = 0; ok && i < btf_vlen(t); ++i) ok = remap(p[i].type);
        break;
      }
      default:
        break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::expected<std::string, std::string> btf_subset(const btf* source,
                                                   const std::set<std::string>& root_structs) {
  if (!source) return std::unexpected("no BTF to take a subset of");
  Selection selection(source, root_structs);
  for (const std::string& name : root_structs) {
    int id = btf__find_by_name_kind(source, name.c_str(), BTF_KIND_STRUCT);
    if (id > 0) selection.visit(id, false);
  }
  std::unique_ptr<btf, BtfDeleter> dst(btf__new_empty());
  if (!dst) return std::unexpected("btf__new_empty failed");
  std::map<int, int> ids;
  for (int id : selection.whole) {
    int copied = btf__add_type(dst.get(), source, btf__type_by_id(source, id));
    if (copied < 0) return std::unexpected(fmt::format("btf__add_type({}) failed", id));
    ids[id] = copied;
  }
  for (int id : selection.declared_only) {
    if (ids.count(id)) continue;  // also embedded somewhere: kept whole
    const btf_type* t = btf__type_by_id(source, id);
    int declared = btf__add_fwd(dst.get(), btf__name_by_offset(source, t->name_off),
                                btf_is_union(t) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
    if (declared < 0) return std::unexpected(fmt::format("btf__add_fwd({}) failed", id));
    ids[id] = declared;
  }
  if (!remap_references(dst.get(), ids))
    return std::unexpected("a copied BTF type refers to a type outside the subset");
  __u32 size = 0;
  const void* raw = btf__raw_data(dst.get(), &size);
  if (!raw) return std::unexpected("btf__raw_data failed");
  return std::string(static_cast<const char*>(raw), size);
}

}  // namespace bpfql
