# fuzz/flags.cmake — included by the top-level CMakeLists.txt before any target is defined,
# because a fuzzing build must instrument every library the targets link (coverage feedback
# from the reference, the harness and the backends), not only the target files.
#
# QMM_FUZZ_ENGINE (with QMM_FUZZ=ON):
#   libfuzzer  clang: every target gets -fsanitize=fuzzer-no-link plus ASan+UBSan (unless
#              QMM_SANITIZE says otherwise: -DQMM_SANITIZE=OFF is a plain build, for measuring
#              throughput and for the fastest campaigns); the fuzz_<target> binaries link
#              -fsanitize=fuzzer
#   afl        CC=afl-clang-fast or afl-clang-lto: the compiler instruments; fuzz_<target>_afl
#              binaries get the persistent-mode main (fuzz/afl_main.c); sanitizers and CMPLOG
#              come from AFL_USE_ASAN / AFL_USE_UBSAN / AFL_LLVM_CMPLOG at build time
#   external   CFLAGS carry the instrumentation and QMM_FUZZ_LINK the engine (ClusterFuzzLite
#              and OSS-Fuzz: -DQMM_FUZZ_LINK="$LIB_FUZZING_ENGINE")
set(QMM_FUZZ_ENGINE "libfuzzer" CACHE STRING "Fuzzing engine for QMM_FUZZ: libfuzzer, afl or external")
set(QMM_FUZZ_LINK "" CACHE STRING "Engine link flags for QMM_FUZZ_ENGINE=external")

if(QMM_FUZZ AND QMM_FUZZ_ENGINE STREQUAL "libfuzzer")
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    # only an unset QMM_SANITIZE defaults: OFF (false, but set) asks for no sanitizer
    if(QMM_SANITIZE STREQUAL "")
      set(QMM_SANITIZE "address,undefined")
    endif()
    add_compile_options(-fsanitize=fuzzer-no-link)
    if(NOT QMM_SANITIZE)
      # Without a sanitizer runtime nothing defines the coverage hooks for the executables
      # that are not fuzz targets (qmmcheck, qmm_cuda_layout_check, ...): libFuzzer's own
      # runtime, linked without its main, does.
      add_link_options(-fsanitize=fuzzer-no-link)
    endif()
  else()
    message(WARNING "QMM_FUZZ=ON needs clang for libFuzzer; only the replay drivers are built")
  endif()
endif()
