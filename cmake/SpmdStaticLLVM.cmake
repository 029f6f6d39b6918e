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

if(SPMD_STATIC_LLVM AND TARGET LLVMSupport AND TARGET LLVMCore)
  # LLVMSupport's link interface names zstd's CMake target, which only the
  # dylib-less configuration defines; the runtime library is enough.
  if(NOT TARGET zstd::libzstd_shared)
    find_library(SPMD_ZSTD_LIBRARY NAMES zstd libzstd.so.1 REQUIRED)
    add_library(zstd::libzstd_shared SHARED IMPORTED)
    set_target_properties(zstd::libzstd_shared PROPERTIES
                          IMPORTED_LOCATION "${SPMD_ZSTD_LIBRARY}")
  endif()
  set(LLVM_LINK_LLVM_DYLIB OFF)
  add_library(spmd_llvm_static INTERFACE)
  llvm_map_components_to_libnames(spmd_llvm_libs
    Support Core BinaryFormat BitReader BitWriter AsmParser TargetParser
    FrontendOpenMP Demangle)
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
