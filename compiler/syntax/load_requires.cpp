// `requires:` — what a query needs of a kernel: a minimum release, probe kinds, BTF.
#include <fmt/format.h>

#include "compiler/syntax/requires.h"
#include "compiler/syntax/load_internal.h"

namespace bpfql::load {

Result<Requirements> requirements(const Entry& entry, const YamlSource& src) {
  if (!entry.value.IsMap())
    return error_at(entry.value_loc,
                    fmt::format("'requires' must be a mapping such as {{kernel: \"5.8\", probes: "
                                "[kprobe], btf: true}}, not {}",
                                kind_name(entry.value)));
  auto entries = entries_of(entry.value, src, "requires");
  if (!entries) return std::unexpected(entries.error());
  Requirements needs;
  needs.loc = entry.key_loc;
  for (const Entry& e : *entries) {
    if (e.key == "kernel") {
      auto text = scalar(e, "a kernel release such as \"5.8\" or \">= 5.8\"");
      if (!text) return std::unexpected(text.error());
      if (!parse_minimum_release(text->text))
        return error_at(text->loc, fmt::format("'kernel' must be a release such as \"5.8\" or "
                                               "\">= 5.8\", not '{}'",
                                               text->text));
      needs.kernel = std::move(*text);
    } else if (e.key == "probes") {
      auto kinds = text_list(e, src, "a probe kind or a list of them", /*strings=*/false);
      if (!kinds) return std::unexpected(kinds.error());
      for (const Located& kind : *kinds)
        if (!is_requirable_probe_kind(kind.text))
          return error_at(kind.loc, fmt::format("unknown probe kind '{}' in 'requires'; one of {}{}",
                                                kind.text, requirable_probe_kinds_text(),
                                                did_you_mean(kind.text, requirable_probe_kinds())));
      needs.probe_kinds = std::move(*kinds);
    } else if (e.key == "btf") {
      auto text = scalar(e, "true or false");
      if (!text) return std::unexpected(text.error());
      auto yes = parse_bool(text->text);
      if (!yes)
        return error_at(text->loc, fmt::format("'btf' must be true or false, not '{}'", text->text));
      if (*yes) needs.btf = text->loc;
    } else {
      return std::unexpected(unknown_key(e, "requires", {"kernel", "probes", "btf"}));
    }
  }
  return needs;
}

}  // namespace bpfql::load
