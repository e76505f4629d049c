// Stable error codes shared by the pure C++ engine and the Node-API layer. No napi.h here.
#ifndef LLAMAD_NATIVE_ERROR_CODE_H_
#define LLAMAD_NATIVE_ERROR_CODE_H_

#include <stdexcept>
#include <string>

namespace llamad {

// Every error the addon reports carries one of these codes. The JS strings ("LLAMA_*", see ErrorCodeName) are part
// of the contract in binding.d.ts (NativeErrorCode) and must never change.
enum class ErrorCode {
  kModelLoadFailed,
  kContextCreateFailed,
  kExceedContext,
  kDecodeFailed,
  kDisposed,
  kInvalidArgument,
  kCancelled,
  kOom,
  kTemplateFailed,
  kQuantizeFailed,
  kInternal,
};

// "LLAMA_MODEL_LOAD_FAILED", ... for `code`.
const char* ErrorCodeName(ErrorCode code);

// Exception type used inside the addon to carry an ErrorCode to the point where it is reported to JS.
class LlamaError : public std::runtime_error {
 public:
  LlamaError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_ERROR_CODE_H_
