# ddp_warnings: the project's warning flags, linked PRIVATE by every target we own.
# ddp_sanitize: the DDP_SANITIZE sanitizers (empty: none), for launcher targets and tests.
# Compiler-specific flags only where that compiler knows them: -Wshadow=local is GCC's,
# Clang's nearest is -Wshadow-uncaptured-local.
add_library(ddp_warnings INTERFACE)
target_compile_options(ddp_warnings INTERFACE -Wall -Wextra -Wpedantic
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
  # GCC 12 at -O3 in C++20 (torch 2.x's standard) warns -Wrestrict and -Wstringop-overflow
  # inside libstdc++ for `"text" + std::string` (GCC bug 105329, false positives fixed in 13);
  # runtime/CMakeLists.txt adds -Wno-array-bounds, the same bug's third face, for libddp's users.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict -Wno-stringop-overflow>
  $<$<CXX_COMPILER_ID:Clang,AppleClang>:-Wshadow-uncaptured-local>
  $<$<BOOL:${DDP_WARNINGS_AS_ERRORS}>:-Werror>)

add_library(ddp_sanitize INTERFACE)
if(DDP_SANITIZE)
  target_compile_options(ddp_sanitize INTERFACE -fsanitize=${DDP_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(ddp_sanitize INTERFACE -fsanitize=${DDP_SANITIZE})
endif()
