# Links LLVM's static component libraries instead of libLLVM.so.
#
# Debian's MLIR exports its libraries against the LLVM dylib. Loading that
# library costs every process ~17 ms (relocations and page faults of a
# 100+ MiB file), which is most of an spmd-opt run on small inputs and is
# paid hundreds of times by the lit suite. The static components come with
# llvm-22-dev; when they are missing this falls back to the dylib.
#
# Every imported MLIR target's link interface names the dylib as `LLVM`; it
# is replaced by the static components, and our own targets stop asking for
# the dylib, so one process never holds two copies of LLVM's globals.
option(SPMD_STATIC_LLVM "Link LLVM's static component libraries" ON)

# LLVMSupport's link interface names CMake targets that only LLVM's
# dylib-less configuration is sure to define (zlib and zstd, found there
# through their -dev packages); the runtime libraries, always installed with
# libllvm22, are enough to link. Anything else missing: use the dylib.
function(spmd_provide_library target)
  if(TARGET ${target})
    return()
  endif()
  string(MAKE_C_IDENTIFIER "SPMD_LIB_${target}" var)
  find_library(${var} NAMES ${ARGN})
  if(${var})
    add_library(${target} SHARED IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${${var}}")
  endif()
endfunction()

set(spmd_static_ok FALSE)
if(SPMD_STATIC_LLVM AND TARGET LLVMSupport AND TARGET LLVMCore)
  spmd_provide_library(ZLIB::ZLIB z libz.so.1)
  spmd_provide_library(zstd::libzstd_shared zstd libzstd.so.1)
  set(spmd_static_ok TRUE)
  get_target_property(spmd_support_deps LLVMSupport INTERFACE_LINK_LIBRARIES)
  foreach(dep IN LISTS spmd_support_deps)
    if((dep MATCHES "::" AND NOT TARGET ${dep}) OR
       (IS_ABSOLUTE "${dep}" AND NOT EXISTS "${dep}"))
      message(STATUS "spmd: LLVMSupport needs ${dep}, which is missing")
      set(spmd_static_ok FALSE)
    endif()
  endforeach()
endif()

if(spmd_static_ok)
  set(LLVM_LINK_LLVM_DYLIB OFF)
  add_library(spmd_llvm_static INTERFACE)
  # What the MLIR libraries we link use; the rest follows from each
  # component's own link interface.
  # spmd-gpu-opt's GPU lowering adds code generation (MLIR's GPU transforms
  # reference the NVPTX and AMDGPU targets); a static archive only lends the
  # objects a program references, so spmd-opt links none of it.
  llvm_map_components_to_libnames(spmd_llvm_libs Support Core FrontendOpenMP
                                  Passes IPO Linker IRReader NVPTX AMDGPU)
  target_link_libraries(spmd_llvm_static INTERFACE ${spmd_llvm_libs})
  get_property(spmd_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
  foreach(target IN LISTS spmd_imported)
    if(NOT target MATCHES "^MLIR")
      continue()
    endif()
    get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
    if(deps AND "LLVM" IN_LIST deps)
      list(TRANSFORM deps REPLACE "^LLVM$" "spmd_llvm_static")
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES
                                                 "${deps}")
    endif()
  endforeach()
  message(STATUS "spmd: linking LLVM's static component libraries")
else()
  message(STATUS "spmd: linking libLLVM.so (static components not found or "
                 "SPMD_STATIC_LLVM=OFF)")
endif()
