# CMake helpers of the ROS 2 interface packages that build as pip wheels (coteam_interfaces, and the pip-only
# copies of standard interfaces in ros2_ws/pip/). Two ways to build such a package:
#  * colcon build on an installed ROS 2 distribution (ament finds everything through the sourced environment);
#  * pip install --no-build-isolation <package dir>, through scikit-build-core (SKBUILD is defined), against the
#    ROS 2 wheels installed in the running interpreter's prefix (a venv is laid out like an ament prefix).

# Call right after project(): in a wheel build, make the interpreter's prefix the ament prefix.
macro(coteam_use_python_prefix)
  if(DEFINED SKBUILD)
    if(NOT DEFINED Python3_EXECUTABLE)
      set(Python3_EXECUTABLE "${Python_EXECUTABLE}")
    endif()
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c "import sys; print(sys.prefix, end='')"
      OUTPUT_VARIABLE COTEAM_PYTHON_PREFIX
      RESULT_VARIABLE _coteam_prefix_result
    )
    if(NOT _coteam_prefix_result EQUAL 0 OR NOT IS_DIRECTORY "${COTEAM_PYTHON_PREFIX}/share/ament_cmake")
      message(FATAL_ERROR
        "ament_cmake not found in the prefix of ${Python3_EXECUTABLE} ('${COTEAM_PYTHON_PREFIX}'): "
        "install requirements/ros-build.txt first and build with pip install --no-build-isolation")
    endif()
    list(PREPEND CMAKE_PREFIX_PATH "${COTEAM_PYTHON_PREFIX}")
    if(DEFINED ENV{AMENT_PREFIX_PATH} AND NOT "$ENV{AMENT_PREFIX_PATH}" STREQUAL "")
      set(ENV{AMENT_PREFIX_PATH} "${COTEAM_PYTHON_PREFIX}:$ENV{AMENT_PREFIX_PATH}")
    else()
      set(ENV{AMENT_PREFIX_PATH} "${COTEAM_PYTHON_PREFIX}")
    endif()
    set(BUILD_TESTING OFF CACHE BOOL "No tests in a wheel build" FORCE)
  endif()
endmacro()

# Call after rosidl_generate_interfaces(). The PyPI ROS 2 wheels export their <pkg>__rosidl_generator_py targets
# with the include directories of the machine that built them (e.g. /opt/python/cp311-cp311/include/python3.11),
# and CMake refuses to generate a target that links to an imported target with a missing include directory.
# Replace such missing paths with this interpreter's Python and NumPy headers. Targets whose directories all exist
# (as on an apt-installed ROS 2) are left untouched.
macro(coteam_fix_wheel_include_dirs)
  find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module NumPy)
  get_directory_property(_coteam_imported_targets IMPORTED_TARGETS)
  foreach(_target IN LISTS _coteam_imported_targets)
    if(NOT _target MATCHES "__rosidl_generator_py$")
      continue()
    endif()
    get_target_property(_includes ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _includes)
      continue()
    endif()
    set(_kept_includes "")
    set(_dropped FALSE)
    foreach(_dir IN LISTS _includes)
      if(IS_ABSOLUTE "${_dir}" AND NOT _dir MATCHES "\\$<" AND NOT EXISTS "${_dir}")
        set(_dropped TRUE)
      else()
        list(APPEND _kept_includes "${_dir}")
      endif()
    endforeach()
    if(_dropped)
      list(APPEND _kept_includes ${Python3_INCLUDE_DIRS} ${Python3_NumPy_INCLUDE_DIRS})
      list(REMOVE_DUPLICATES _kept_includes)
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept_includes}")
    endif()
  endforeach()
endmacro()
