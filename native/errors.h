// Node-API side of error reporting: JS Error objects with a stable `code` property.
#ifndef LLAMAD_NATIVE_ERRORS_H_
#define LLAMAD_NATIVE_ERRORS_H_

#include <napi.h>

#include <exception>
#include <string>

#include "error_code.h"

namespace llamad {

// A JS Error with `message` and `code` = ErrorCodeName(code).
Napi::Error MakeError(Napi::Env env, ErrorCode code, const std::string& message);

// Throws MakeError(...) as a C++ Napi::Error (NAPI_CPP_EXCEPTIONS turns it into a JS exception).
[[noreturn]] void ThrowError(Napi::Env env, ErrorCode code, const std::string& message);

// Code and message of a caught C++ exception: LlamaError keeps its code, std::bad_alloc is kOom, any other
// std::exception becomes `fallback` with what() in the message, unknown exceptions become kInternal.
struct ErrorInfo {
  ErrorCode code;
  std::string message;
};
ErrorInfo DescribeException(std::exception_ptr error, ErrorCode fallback, const std::string& context);

// Runs `fn` on the JS thread and turns every C++ exception except Napi::Error into a coded JS error.
// `context` names the operation (e.g. "tokenize") and prefixes the message.
template <typename Fn>
auto GuardJs(Napi::Env env, ErrorCode fallback, const char* context, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    ErrorInfo info = DescribeException(std::current_exception(), fallback, context);
    throw MakeError(env, info.code, info.message);
  }
}

}  // namespace llamad

#endif  // LLAMAD_NATIVE_ERRORS_H_
