# Installation: public headers, libraries, the CLI, a CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/qmm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The contract the headers implement and the pages they cite (include/qmm/ops.h, qmm/reference.h;
# tests/install/install_smoke.sh checks that every page an installed header names is here),
# where packaged docs go: share/doc/<package>, under the package's name qmm, not the project's.
# Every page of docs/, since they link one another (formats.md -> edge-suites.md, semantics.md
# -> architecture.md, ...), the JSON report's schema (docs/report.schema.json, which formats.md
# links) and the pictures the pages show.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/qmm
        FILES_MATCHING PATTERN "*.md" PATTERN "*.json" PATTERN "*.png")
# The example plugin, where Debian puts a package's examples: a vendor with only the installed
# prefix copies it from there (README.md, "Vendor quick start").
install(DIRECTORY examples/vendor-plugin DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/qmm/examples)
# Every suite `run --vectors vectors` reads, for `run` without --vectors (harness/cli/datadir.c);
# the scripts that made them stay in the source tree.
install(DIRECTORY vectors/onnx vectors/seeds vectors/edge vectors/qordered vectors/peers
        DESTINATION ${QMM_INSTALL_VECTORSDIR}
        PATTERN "*.py" EXCLUDE)
# qmm_exec, the Python side of the exec: protocol, as a package a Python user pip-installs from
# here: pip install PREFIX/share/qmm/python (python/README.md)
install(DIRECTORY python/ DESTINATION ${CMAKE_INSTALL_DATADIR}/qmm/python
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
# The reference's own API (exact computation, explain, profiles) for tools built on it. The
# operator rules it links (ops/, libqmm_ops) stay project-internal: their header is not installed.
install(FILES reference/qmm_reference.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qmm
        RENAME reference.h)

# Two export sets, one per package component (cmake/qmmConfig.cmake.in): the headers, which need
# nothing, and the reference, whose static library links GMP. qmm_ops goes with the reference
# because the static reference (and the optimized library) link it.
install(TARGETS qmm_interface EXPORT qmmHeadersTargets
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS qmm_ops qmm_reference EXPORT qmmReferenceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS qmm_base qmm_onnx qmm_cases qmm_gen qmm_invoke qmm_judge qmm_run qmm_report
                qmm_harness qmm_optimized
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS qmmcheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set_target_properties(qmm_reference PROPERTIES EXPORT_NAME reference)
set_target_properties(qmm_ops PROPERTIES EXPORT_NAME ops)
install(EXPORT qmmHeadersTargets NAMESPACE qmm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qmm)
install(EXPORT qmmReferenceTargets NAMESPACE qmm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qmm)
configure_package_config_file(cmake/qmmConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/qmmConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qmm)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/qmmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/qmmConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/qmmConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qmm)

file(RELATIVE_PATH QMM_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/qmm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/qmm.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/qmm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The command line's manual page and bash completion (docs/qmmcheck.1,
# scripts/completion/qmmcheck.bash), where man and bash-completion look for them.
install(FILES docs/qmmcheck.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES scripts/completion/qmmcheck.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME qmmcheck)
