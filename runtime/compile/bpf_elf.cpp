#include "runtime/compile/bpf_elf.h"

#include <elf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <linux/btf.h>

#include <cstring>
#include <map>
#include <optional>

#include "compiler/codegen/c_prelude.h"

namespace bpfql {
namespace {

constexpr uint32_t kRelocation64 = 1;  // R_BPF_64_64: the address of a symbol in an ld_imm64

// struct bpfql_map_def of compiler/codegen/c_prelude.cpp.
struct MapDef {
  uint32_t type, key_size, value_size, max_entries, flags;
};

class Elf {
 public:
  explicit Elf(std::string_view bytes) : bytes_(bytes) {}

  std::string open() {
    if (bytes_.size() < sizeof(Elf64_Ehdr)) return "too short for an ELF header";
    std::memcpy(&header_, bytes_.data(), sizeof header_);
    if (std::memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0 ||
        header_.e_ident[EI_CLASS] != ELFCLASS64 || header_.e_ident[EI_DATA] != ELFDATA2LSB)
      return "not a 64-bit little-endian ELF object";
    if (header_.e_machine != EM_BPF || header_.e_type != ET_REL) return "not a BPF object";
    if (header_.e_shentsize != sizeof(Elf64_Shdr)) return "unexpected section header size";
    uint64_t table = uint64_t{header_.e_shnum} * sizeof(Elf64_Shdr);
    if (header_.e_shoff > bytes_.size() || table > bytes_.size() - header_.e_shoff)
      return "section headers out of bounds";
    sections_.resize(header_.e_shnum);
    std::memcpy(sections_.data(), bytes_.data() + header_.e_shoff,
                sections_.size() * sizeof(Elf64_Shdr));
    for (const auto& s : sections_)
      if (s.sh_type != SHT_NOBITS &&
          (s.sh_offset > bytes_.size() || s.sh_size > bytes_.size() - s.sh_offset))
        return "a section is out of bounds";
    if (header_.e_shstrndx >= sections_.size()) return "no section name table";
    return "";
  }

  size_t section_count() const { return sections_.size(); }
  const Elf64_Shdr& section(size_t i) const { return sections_[i]; }
  std::string_view data(size_t i) const {
    const auto& s = sections_[i];
    if (s.sh_type == SHT_NOBITS) return {};
    return bytes_.substr(s.sh_offset, s.sh_size);
  }
  // A NUL-terminated string at `offset` of string table section `table`.
  std::string_view string(size_t table, uint64_t offset) const {
    std::string_view t = data(table);
    if (offset >= t.size()) return {};
    t.remove_prefix(offset);
    return t.substr(0, t.find('\0'));
  }
  std::string_view section_name(size_t i) const {
    return string(header_.e_shstrndx, sections_[i].sh_name);
  }
  std::optional<size_t> find_section(std::string_view name) const {
    for (size_t i = 0; i < sections_.size(); ++i)
      if (section_name(i) == name) return i;
    return std::nullopt;
  }

 private:
  std::string_view bytes_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
};

// The BTF a task storage map is created with (the kernel creates local storage maps only with
// BTF for their key and value): [1] int, the key; [2] the value: an unsigned integer of the
// value's size when it is 1, 2, 4 or 8 bytes, else an array of that many bytes ([3] is u8).
constexpr uint32_t kBtfKeyType = 1, kBtfValueType = 2;
std::expected<std::string, std::string> local_storage_btf(uint32_t value_size) {
  if (value_size == 0 || value_size > 65536)
    return std::unexpected(fmt::format("a task storage value of {} bytes", value_size));
  const char strings[] = "\0int\0value";  // offsets 1 and 5
  std::string types;
  auto put = [&](uint32_t v) { types.append(reinterpret_cast<const char*>(&v), 4); };
  put(1), put(BTF_KIND_INT << 24), put(4), put(BTF_INT_SIGNED << 24 | 32);
  if (value_size == 1 || value_size == 2 || value_size == 4 || value_size == 8) {
    put(5), put(BTF_KIND_INT << 24), put(value_size), put(value_size * 8);
  } else {  // a struct of the span's begin time and captures, as bytes
    put(0), put(BTF_KIND_ARRAY << 24), put(0);
    put(3), put(kBtfKeyType), put(value_size);  // struct btf_array {type, index_type, nelems}
    put(5), put(BTF_KIND_INT << 24), put(1), put(8);
  }
  btf_header header{};
  header.magic = BTF_MAGIC;
  header.version = BTF_VERSION;
  header.hdr_len = sizeof header;
  header.type_off = 0;
  header.type_len = static_cast<uint32_t>(types.size());
  header.str_off = header.type_len;
  header.str_len = sizeof strings;
  std::string out(reinterpret_cast<const char*>(&header), sizeof header);
  return out + types + std::string(strings, sizeof strings);
}

template <typename T>
std::vector<T> table_of(std::string_view data) {
  std::vector<T> out(data.size() / sizeof(T));
  std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

std::expected<ProgramImage, std::string> image_from_elf(std::string_view object,
                                                        const std::vector<ElfFunction>& functions,
                                                        uint32_t possible_cpus) {
  Elf elf(object);
  if (std::string problem = elf.open(); !problem.empty()) return std::unexpected(problem);

  std::optional<size_t> symtab;
  for (size_t i = 0; i < elf.section_count(); ++i)
    if (elf.section(i).sh_type == SHT_SYMTAB) symtab = i;
  if (!symtab) return std::unexpected("no symbol table");
  size_t strtab = elf.section(*symtab).sh_link;
  if (strtab >= elf.section_count()) return std::unexpected("no symbol string table");
  auto symbols = table_of<Elf64_Sym>(elf.data(*symtab));

  ProgramImage image;
  image.license = "GPL";
  if (auto license = elf.find_section("license")) image.license = std::string(elf.string(*license, 0));

  // The maps, in the order of their definitions; by symbol index for the relocations.
  std::map<size_t, uint32_t> map_of_symbol;
  uint32_t btf_value_size = 0;  // of the task storage maps' BTF
  if (auto maps = elf.find_section(codegen::kPlainMapSection)) {
    std::string_view defs = elf.data(*maps);
    std::map<uint64_t, size_t> by_offset;  // definition offset → symbol
    for (size_t s = 0; s < symbols.size(); ++s)
      if (symbols[s].st_shndx == *maps && ELF64_ST_TYPE(symbols[s].st_info) == STT_OBJECT)
        by_offset[symbols[s].st_value] = s;
    for (const auto& [offset, s] : by_offset) {
      if (offset + sizeof(MapDef) > defs.size())
        return std::unexpected("a map definition is out of bounds");
      MapDef def;
      std::memcpy(&def, defs.data() + offset, sizeof def);
      uint32_t entries = def.type == BPF_MAP_TYPE_PERF_EVENT_ARRAY ? possible_cpus : def.max_entries;
      map_of_symbol[s] = static_cast<uint32_t>(image.maps.size());
      image.maps.push_back(ImageMap{std::string(elf.string(strtab, symbols[s].st_name)), def.type,
                                    def.key_size, def.value_size, entries, def.flags, 0, 0});
      if (map_type_needs_btf(def.type)) {  // one BTF for all of them: the same value size
        if (def.type != BPF_MAP_TYPE_TASK_STORAGE ||
            (btf_value_size != 0 && btf_value_size != def.value_size))
          return std::unexpected("a map that needs BTF of its own: " + image.maps.back().name);
        if (image.btf.empty()) {
          auto btf = local_storage_btf(def.value_size);
          if (!btf) return std::unexpected(btf.error());
          image.btf = std::move(*btf);
          btf_value_size = def.value_size;
        }
        image.maps.back().btf_key_type_id = kBtfKeyType;
        image.maps.back().btf_value_type_id = kBtfValueType;
      }
    }
  }

  // The map whose value a symbol is (a variable in section "map_value/NAME", c_prelude.h).
  auto map_of_value_section = [&](size_t sym) -> std::optional<uint32_t> {
    if (sym >= symbols.size() || symbols[sym].st_shndx == SHN_UNDEF ||
        symbols[sym].st_shndx >= elf.section_count())
      return std::nullopt;
    std::string_view section = elf.section_name(symbols[sym].st_shndx);
    std::string_view prefix = codegen::kPlainMapValueSectionPrefix;
    if (!section.starts_with(prefix)) return std::nullopt;
    section.remove_prefix(prefix.size());
    for (uint32_t m = 0; m < image.maps.size(); ++m)
      if (image.maps[m].name == section && image.maps[m].type == BPF_MAP_TYPE_ARRAY &&
          image.maps[m].max_entries == 1)
        return m;
    return std::nullopt;
  };

  for (const auto& fn : functions) {
    std::string section_name = codegen::kPlainFunctionSectionPrefix + fn.name;
    auto section = elf.find_section(section_name);
    if (!section) return std::unexpected("no section " + section_name);
    ImageFunction f{fn.name, fn.prog_type, std::string(elf.data(*section)), {}, {}};
    if (f.code.empty() || f.code.size() % 8 != 0)
      return std::unexpected(fn.name + ": its code is not whole instructions");
    for (size_t r = 0; r < elf.section_count(); ++r) {
      const auto& rel = elf.section(r);
      if (rel.sh_info != *section) continue;
      if (rel.sh_type == SHT_RELA) return std::unexpected(fn.name + ": RELA relocations");
      if (rel.sh_type != SHT_REL) continue;
      for (const auto& entry : table_of<Elf64_Rel>(elf.data(r))) {
        size_t sym = ELF64_R_SYM(entry.r_info);
        auto map = map_of_symbol.find(sym);
        std::string target =
            sym < symbols.size() ? std::string(elf.string(strtab, symbols[sym].st_name)) : "?";
        // A map's value (a variable in "map_value/NAME"): the address of the map's one value.
        std::optional<uint32_t> value_of = map_of_value_section(sym);
        if (ELF64_R_TYPE(entry.r_info) != kRelocation64 ||
            (map == map_of_symbol.end() && !value_of))
          return std::unexpected(fmt::format("{}: a relocation (type {}) to '{}', which is no map",
                                             fn.name, ELF64_R_TYPE(entry.r_info), target));
        uint64_t insn = entry.r_offset / 8;
        if (entry.r_offset % 8 != 0 || (insn + 1) * 8 >= f.code.size() ||
            static_cast<uint8_t>(f.code[insn * 8]) != image_detail::kLdImm64)
          return std::unexpected(
              fmt::format("{}: the relocation to '{}' is on no ld_imm64", fn.name, target));
        auto* bytes = reinterpret_cast<uint8_t*>(f.code.data() + insn * 8);
        if (value_of) {
          // The offset in the value: the symbol's own plus the addend clang left in imm.
          int32_t addend;
          std::memcpy(&addend, bytes + 4, 4);
          uint64_t offset = symbols[sym].st_value + static_cast<uint64_t>(static_cast<int64_t>(addend));
          if (offset + 8 > image.maps[*value_of].value_size)
            return std::unexpected(
                fmt::format("{}: '{}' is outside its map's value", fn.name, target));
          uint32_t off32 = static_cast<uint32_t>(offset);
          bytes[1] = static_cast<uint8_t>((bytes[1] & 0x0f) | (BPF_PSEUDO_MAP_VALUE << 4));
          std::memset(bytes + 4, 0, 4);
          std::memcpy(bytes + 12, &off32, 4);
          f.map_refs.push_back({static_cast<uint32_t>(insn), *value_of});
          continue;
        }
        bytes[1] = static_cast<uint8_t>((bytes[1] & 0x0f) | (BPF_PSEUDO_MAP_FD << 4));
        std::memset(bytes + 4, 0, 4);
        std::memset(bytes + 12, 0, 4);
        f.map_refs.push_back({static_cast<uint32_t>(insn), map->second});
      }
    }
    f.constant_refs = take_constant_references(f.code);
    image.functions.push_back(std::move(f));
  }
  return image;
}

}  // namespace bpfql
