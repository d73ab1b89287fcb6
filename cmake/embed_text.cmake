# Writes OUTPUT: a C++ file defining `const char* NAME()` that returns INPUT's text, for
# files the launcher must always find at run time (python/ddp_standby.py). Run at build time:
#   cmake -DINPUT=... -DOUTPUT=... -DNAMESPACE=... -DNAME=... -P embed_text.cmake
file(READ "${INPUT}" text)
string(FIND "${text}" ")ddp_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )ddp_embed\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
  "namespace ${NAMESPACE} {\n"
  "const char* ${NAME}() {\n"
  "  return R\"ddp_embed(${text})ddp_embed\";\n"
  "}\n"
  "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
