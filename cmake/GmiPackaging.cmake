# Install and export gmi so that find_package(gmi CONFIG) works from an install prefix and from the build tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GMI_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gmi")

install(TARGETS gmi EXPORT gmi-targets FILE_SET HEADERS)
install(EXPORT gmi-targets NAMESPACE gmi:: DESTINATION "${GMI_INSTALL_CMAKEDIR}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/gmi-config.cmake.in"
                              "${PROJECT_BINARY_DIR}/gmi-config.cmake" INSTALL_DESTINATION "${GMI_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/gmi-config-version.cmake"
                                 COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/gmi-config.cmake" "${PROJECT_BINARY_DIR}/gmi-config-version.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake" DESTINATION "${GMI_INSTALL_CMAKEDIR}")

# Build tree: the same config file next to an exported target file and the NCCL find module.
export(EXPORT gmi-targets NAMESPACE gmi:: FILE "${PROJECT_BINARY_DIR}/gmi-targets.cmake")
configure_file("${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake" "${PROJECT_BINARY_DIR}/FindNCCL.cmake" COPYONLY)
