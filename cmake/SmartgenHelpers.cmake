# smartgen_library(<layer> SOURCES ... DEPS ...)
#   Defines target smartgen_<layer> (static) with include root src/ and alias smartgen::<layer>.
function(smartgen_library layer)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  add_library(smartgen_${layer} STATIC ${L_SOURCES})
  add_library(smartgen::${layer} ALIAS smartgen_${layer})
  target_include_directories(smartgen_${layer} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(smartgen_${layer} PUBLIC ${L_DEPS})
endfunction()

# smartgen_test(<name> LABEL unit|model|net SOURCES ... DEPS ... [TIMEOUT s])
#   One GoogleTest binary; each TEST becomes a CTest case carrying the label.
function(smartgen_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES} ${CMAKE_SOURCE_DIR}/tests/support/unique_temp_dir.cc)
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    SMARTGEN_SHARED_DIR="${SMARTGEN_SHARED_DIR}"
    SMARTGEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    SMARTGEN_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT})
endfunction()
