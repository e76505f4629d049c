#include "slot.h"

#include <algorithm>

namespace llamad {

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kEog:
      return "eog";
    case StopReason::kStop:
      return "stop";
    case StopReason::kLength:
      return "length";
    case StopReason::kCancelled:
      return "cancelled";
  }
  return "cancelled";
}

size_t Slot::CommonPrefix(const std::vector<llama_token>& tokens) const {
  const size_t n = std::min(cache.size(), tokens.size());
  size_t i = 0;
  while (i < n && cache[i] == tokens[i]) ++i;
  return i;
}

}  // namespace llamad
