# The guard work's plugin and CLI test (include()d by tests/plugins/CMakeLists.txt):
# guard_plugin.c misbehaves against the guards and the verdict's text; guard_cli.c runs it.
find_package(Threads REQUIRED)
add_library(qmm_guard_plugin MODULE ${CMAKE_CURRENT_LIST_DIR}/guard_plugin.c)
target_link_libraries(qmm_guard_plugin PRIVATE qmm_interface Threads::Threads)

add_executable(test_guard_cli ${CMAKE_CURRENT_LIST_DIR}/guard_cli.c)
target_link_libraries(test_guard_cli PRIVATE PkgConfig::CRITERION)
target_include_directories(test_guard_cli PRIVATE ${PROJECT_SOURCE_DIR})
add_test(NAME test_guard_cli COMMAND test_guard_cli --jobs 2)
set_tests_properties(test_guard_cli PROPERTIES ENVIRONMENT
  "${QMM_TEST_ENV};QMM_GUARD_PLUGIN=$<TARGET_FILE:qmm_guard_plugin>")
add_dependencies(test_guard_cli qmmcheck qmm_guard_plugin)
