#include "base/name.h"

#include <unordered_set>

namespace kb {

Name Name::intern(std::string_view text) {
  // Nodes never move, so a view of a stored string stays good; the set only grows (one
  // entry per distinct text: phase names, names read back from an op-log file).
  static std::unordered_set<std::string> stored;
  return Name(std::string_view(*stored.emplace(text).first));
}

}  // namespace kb
