#include "errors.h"

#include <new>

namespace llamad {

Napi::Error MakeError(Napi::Env env, ErrorCode code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, ErrorCodeName(code)));
  return error;
}

void ThrowError(Napi::Env env, ErrorCode code, const std::string& message) { throw MakeError(env, code, message); }

ErrorInfo DescribeException(std::exception_ptr error, ErrorCode fallback, const std::string& context) {
  const std::string prefix = context.empty() ? std::string() : context + ": ";
  try {
    std::rethrow_exception(error);
  } catch (const LlamaError& e) {
    return {e.code(), prefix + e.what()};
  } catch (const std::bad_alloc& e) {
    return {ErrorCode::kOom, prefix + "out of memory (" + e.what() + ")"};
  } catch (const std::exception& e) {
    return {fallback, prefix + e.what()};
  } catch (...) {
    return {ErrorCode::kInternal, prefix + "unknown C++ exception"};
  }
}

}  // namespace llamad
