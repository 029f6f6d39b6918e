# Detects the optional GPU toolchain (CUDA toolkit + NCCL) under SPMD_CUDA_ROOT.
# Sets SPMD_HAVE_CUDA to ON only when every piece the GPU path needs is present;
# otherwise the GPU path is skipped with a message that says what is missing.
set(SPMD_HAVE_CUDA OFF)
if(NOT SPMD_ENABLE_CUDA)
  message(STATUS "spmd: GPU path disabled (SPMD_ENABLE_CUDA=OFF)")
  return()
endif()

set(_spmd_cuda_hints ${SPMD_CUDA_ROOT} ${SPMD_CUDA_ROOT}/targets/x86_64-linux)
find_program(SPMD_PTXAS ptxas HINTS ${SPMD_CUDA_ROOT}/bin NO_DEFAULT_PATH)
find_path(SPMD_CUDA_INCLUDE_DIR cuda.h HINTS ${_spmd_cuda_hints}
          PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(SPMD_CUDA_DRIVER_LIB cuda HINTS ${_spmd_cuda_hints}
             PATH_SUFFIXES lib64/stubs lib/stubs lib64 lib NO_DEFAULT_PATH)
find_path(SPMD_NCCL_INCLUDE_DIR nccl.h
          HINTS ${_spmd_cuda_hints} /usr/include PATH_SUFFIXES include)
find_library(SPMD_NCCL_LIB nccl HINTS ${_spmd_cuda_hints}
             PATH_SUFFIXES lib64 lib)
find_library(SPMD_CUBLAS_LIB cublas HINTS ${_spmd_cuda_hints}
             PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)

set(_spmd_missing "")
foreach(_v SPMD_PTXAS SPMD_CUDA_INCLUDE_DIR SPMD_CUDA_DRIVER_LIB
        SPMD_NCCL_INCLUDE_DIR SPMD_NCCL_LIB SPMD_CUBLAS_LIB)
  if(NOT ${_v})
    list(APPEND _spmd_missing ${_v})
  endif()
endforeach()

if(_spmd_missing)
  message(STATUS "spmd: GPU path skipped: not found under ${SPMD_CUDA_ROOT}: "
                 "${_spmd_missing}")
else()
  set(SPMD_HAVE_CUDA ON)
  message(STATUS "spmd: GPU path enabled (CUDA ${SPMD_CUDA_INCLUDE_DIR}, "
                 "NCCL ${SPMD_NCCL_LIB})")
endif()
