# -*- Python -*-
# lit configuration for the spmd test suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SPMD"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.spmd_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%spmd_obj_root", config.spmd_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# The project's tools first, then FileCheck & co. from the LLVM install.
tool_dirs = [config.spmd_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions([ToolSubst("spmd-opt", unresolved="fatal")],
                                   tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if config.spmd_have_cuda:
    config.available_features.add("cuda-toolkit")
