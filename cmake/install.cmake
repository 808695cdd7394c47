# cmake --install BUILD [--prefix P]: the shared library (SONAME libreplayssm.so.MAJOR.MINOR),
# the public headers, the `replayssm` command, replayssm.pc for pkg-config and the CMake package
# (find_package(replayssm) -> the imported target replayssm::replayssm; replayssm_HAS_CUDA and
# the CUDA component say whether the CUDA back end is in). Everything is relocatable: the pc
# file and the package find the prefix from where they were installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RSSM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/replayssm)

install(TARGETS replayssm EXPORT replayssmTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(FILES include/replayssm.h include/replayssm_runtime.h ${PROJECT_BINARY_DIR}/include/replayssm_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# the command finds the library beside it whatever the prefix
set_target_properties(replayssm_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS replayssm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

install(EXPORT replayssmTargets NAMESPACE replayssm:: DESTINATION ${RSSM_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/replayssmConfig.cmake.in ${PROJECT_BINARY_DIR}/replayssmConfig.cmake
                              INSTALL_DESTINATION ${RSSM_CMAKE_DIR})
# before 1.0 a minor version may change the ABI: only the same major.minor is compatible
write_basic_package_version_file(${PROJECT_BINARY_DIR}/replayssmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/replayssmConfig.cmake ${PROJECT_BINARY_DIR}/replayssmConfigVersion.cmake
        DESTINATION ${RSSM_CMAKE_DIR} COMPONENT dev)

file(RELATIVE_PATH RSSM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/replayssm.pc.in ${PROJECT_BINARY_DIR}/replayssm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/replayssm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
