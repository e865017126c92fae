# optimized/cuda/detect.cmake — QMM_CUDA=AUTO|ON|OFF (included by the top-level CMakeLists.txt
# before any target that may link the CUDA backend). Sets QMM_HAVE_CUDA.
#   AUTO  build the backend when nvcc (check_language) and the CUDA toolkit are found; not in
#         sanitizer builds, where nvcc's objects would be uninstrumented and the CUDA runtime
#         trips ASan/LSan (set ON to force it there). Fuzzing builds (QMM_FUZZ) do build it:
#         the differential targets compare its host emulation (cuda:emulate=1, C code the
#         fuzzing build instruments), and without a device it is never initialised further
#         than cudaGetDeviceCount
#   ON    required: configuring fails without nvcc and the toolkit
#   OFF   never
# CMAKE_CUDA_ARCHITECTURES defaults to 80;90 (Ampere and Hopper int8 tensor cores; Ada runs
# the sm_80 code) unless the user sets it.
set(QMM_HAVE_CUDA OFF)
string(TOUPPER "${QMM_CUDA}" qmm_cuda_mode)
if(qmm_cuda_mode STREQUAL "AUTO" AND QMM_SANITIZE AND NOT QMM_FUZZ)
  message(STATUS "CUDA backend: off (QMM_CUDA=AUTO skips sanitizer builds; "
                 "-DQMM_CUDA=ON forces it)")
elseif(qmm_cuda_mode STREQUAL "AUTO" OR QMM_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  set(qmm_cuda_why "")
  if(NOT CMAKE_CUDA_COMPILER)
    set(qmm_cuda_why "no CUDA compiler (nvcc) found: put it on PATH or set CMAKE_CUDA_COMPILER")
  else()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt)
      set(qmm_cuda_why "CUDA toolkit with cuBLASLt not found")
    endif()
  endif()
  if(qmm_cuda_why STREQUAL "")
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    if(QMM_FUZZ)
      # Link every executable with the C compiler (clang with its sanitizer and libFuzzer
      # runtimes, or AFL++'s), not with nvcc's host compiler, which the CUDA objects in the
      # link would otherwise pick; CMake adds the CUDA runtime libraries either way.
      set(CMAKE_CUDA_LINKER_PREFERENCE_PROPAGATES OFF)
    endif()
    set(QMM_HAVE_CUDA ON)
    message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES})")
  elseif(qmm_cuda_mode STREQUAL "AUTO")
    message(STATUS "CUDA backend: off (${qmm_cuda_why})")
  else()
    message(FATAL_ERROR "QMM_CUDA=${QMM_CUDA}: ${qmm_cuda_why}")
  endif()
else()
  message(STATUS "CUDA backend: off (QMM_CUDA=${QMM_CUDA})")
endif()
