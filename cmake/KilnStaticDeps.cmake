# Libraries that kiln-agent links statically and everything else links dynamically.
#
# A library lists its dependency as ${KILN_DEP_<NAME>}: a generator expression that names the
# static archive (lib<name>.a) when the executable being linked has the target property
# KILN_STATIC_LINK set, and the usual shared-library target otherwise. The head target decides,
# so kiln_shared and kiln_agent_core are built once and serve both the static kiln-agent and
# the dynamically linked test binaries.
set(_kiln_static "$<BOOL:$<TARGET_PROPERTY:KILN_STATIC_LINK>>")

# kiln_static_dep(NAME <var-suffix> SHARED <imported target> ARCHIVES <libx.a> ...)
function(kiln_static_dep)
  cmake_parse_arguments(K "" "NAME" "SHARED;ARCHIVES" ${ARGN})
  set(items "")
  foreach(target ${K_SHARED})
    list(APPEND items "$<$<NOT:${_kiln_static}>:${target}>")
  endforeach()
  foreach(archive ${K_ARCHIVES})
    string(MAKE_C_IDENTIFIER "KILN_ARCHIVE_${archive}" cache_var)
    find_library(${cache_var} NAMES ${archive})
    if(NOT ${cache_var})
      if(KILN_AGENT_STATIC)
        message(FATAL_ERROR "kiln-agent links statically and needs ${archive} "
                            "(scripts/install-deps.sh installs it)")
      endif()
      continue()
    endif()
    list(APPEND items "$<${_kiln_static}:${${cache_var}}>")
  endforeach()
  set(KILN_DEP_${K_NAME} ${items} PARENT_SCOPE)
endfunction()

kiln_static_dep(NAME OPENSSL SHARED OpenSSL::SSL OpenSSL::Crypto ARCHIVES libssl.a libcrypto.a)
kiln_static_dep(NAME BLKID SHARED PkgConfig::BLKID ARCHIVES libblkid.a)
kiln_static_dep(NAME ZSTD SHARED PkgConfig::ZSTD ARCHIVES libzstd.a)
kiln_static_dep(NAME LZMA SHARED PkgConfig::LZMA ARCHIVES liblzma.a)
kiln_static_dep(NAME ZLIB SHARED PkgConfig::ZLIB ARCHIVES libz.a)
kiln_static_dep(NAME CARES SHARED PkgConfig::CARES ARCHIVES libcares.a)
