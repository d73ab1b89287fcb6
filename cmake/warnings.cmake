# ddp_warnings: the project's warning flags, linked PRIVATE by every target we own.
# ddp_sanitize: the DDP_SANITIZE sanitizers (empty: none), for launcher targets and tests.
# Compiler-specific flags only where that compiler knows them: -Wshadow=local is GCC's,
# Clang's nearest is -Wshadow-uncaptured-local.
add_library(ddp_warnings INTERFACE)
target_compile_options(ddp_warnings INTERFACE -Wall -Wextra -Wpedantic
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
  $<$<CXX_COMPILER_ID:Clang,AppleClang>:-Wshadow-uncaptured-local>
  $<$<BOOL:${DDP_WARNINGS_AS_ERRORS}>:-Werror>)

add_library(ddp_sanitize INTERFACE)
if(DDP_SANITIZE)
  target_compile_options(ddp_sanitize INTERFACE -fsanitize=${DDP_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(ddp_sanitize INTERFACE -fsanitize=${DDP_SANITIZE})
endif()
