// Errors that cross the engine boundary: a stable code for programs, a message for people.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace folio {

class Error : public std::runtime_error {
 public:
  Error(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// printf-style formatting for error messages.
inline std::string strfmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string strfmt(const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), size_t(n) + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

[[noreturn]] inline void fail(const char* code, const std::string& message) { throw Error(code, message); }

}  // namespace folio
