// The collectives' names (include/trainplan/core/hardware/collective.h).
#include "trainplan/core/hardware/collective.h"

namespace trainplan {

std::string_view to_string(collective_kind k) { return traits_of(k).name; }

}  // namespace trainplan
