#include "error_code.h"

namespace llamad {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kModelLoadFailed:
      return "LLAMA_MODEL_LOAD_FAILED";
    case ErrorCode::kContextCreateFailed:
      return "LLAMA_CONTEXT_CREATE_FAILED";
    case ErrorCode::kExceedContext:
      return "LLAMA_EXCEED_CONTEXT";
    case ErrorCode::kDecodeFailed:
      return "LLAMA_DECODE_FAILED";
    case ErrorCode::kDisposed:
      return "LLAMA_DISPOSED";
    case ErrorCode::kInvalidArgument:
      return "LLAMA_INVALID_ARGUMENT";
    case ErrorCode::kCancelled:
      return "LLAMA_CANCELLED";
    case ErrorCode::kOom:
      return "LLAMA_OOM";
    case ErrorCode::kTemplateFailed:
      return "LLAMA_TEMPLATE_FAILED";
    case ErrorCode::kQuantizeFailed:
      return "LLAMA_QUANTIZE_FAILED";
    case ErrorCode::kInternal:
      return "LLAMA_INTERNAL";
  }
  return "LLAMA_INTERNAL";
}

}  // namespace llamad
