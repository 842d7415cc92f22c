# Writes OUT: a C++ file that compiles each FILES entry (names separated by '|', read
# from DIR) into the binary as a raw string literal, returned by
#   const std::vector<TYPE>& FUNCTION()   in namespace NAMESPACE,
# with INCLUDE (the header declaring TYPE and FUNCTION) included and SOURCE named in
# the "generated from" line. DELIM is the raw string's delimiter: a file that contains
# it cannot be embedded, and the build stops naming the file. The one copy for the
# compatibility matrix (compat_matrix/data) and the templates (templates/files).
foreach(arg OUT DIR FILES INCLUDE NAMESPACE FUNCTION TYPE SOURCE DELIM)
  if(NOT DEFINED ${arg})
    message(FATAL_ERROR "embed.cmake: -D${arg}=... is missing")
  endif()
endforeach()
set(body "// Generated from ${SOURCE} by embed.cmake. Do not edit.\n#include \"${INCLUDE}\"\n\nnamespace ${NAMESPACE} {\n\nconst std::vector<${TYPE}>& ${FUNCTION}() {\n  static const std::vector<${TYPE}> k_files = {\n")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f ${FILES})
  file(READ ${DIR}/${f} content)
  string(FIND "${content}" ")${DELIM}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${DIR}/${f} contains the raw-string delimiter )${DELIM}\"")
  endif()
  string(APPEND body "    {\"${f}\", R\"${DELIM}(${content})${DELIM}\"},\n")
endforeach()
string(APPEND body "  };\n  return k_files;\n}\n\n} // namespace ${NAMESPACE}\n")
file(WRITE ${OUT}.tmp "${body}")
file(RENAME ${OUT}.tmp ${OUT})
