// `requires:` checked against a KernelCatalog: the kernel's release, the probe kinds it offers,
// its BTF. A query whose requirement fails is refused with the requirement as the reason, before
// its probes are looked at.
#pragma once

#include "compiler/check/catalog.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/requires.h"

namespace bpfql {

Result<void> check_requirements(const Requirements& needs, const KernelCatalog& catalog);

}  // namespace bpfql
