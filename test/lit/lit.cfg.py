# lit configuration for fhjit: .fh graph files and .test scripts, checked
# with FileCheck. Substitutions: %fhjit-dump, %fhjit-run, FileCheck, not,
# %ptxas-verify (ptxas -arch=sm_90 when the CUDA toolkit is present).
import os
import shutil
import subprocess
import lit.formats

config.name = "fhjit"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".fh", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fhjit_obj_root, "test", "lit")
# Users run their own .fh tests with fhjit's substitutions:
#   lit -sv BUILD/test/lit --param fhjit_tests=DIR   (scripts/fhjit-lit DIR)
user_tests = lit_config.params.get("fhjit_tests")
if user_tests:
    config.name = "fhjit-user"
    config.test_source_root = os.path.abspath(user_tests)
    config.test_exec_root = os.path.join(config.fhjit_obj_root, "test", "lit-user")

tools = config.fhjit_tools_dir
config.substitutions.append(("%fhjit-dump", os.path.join(tools, "fhjit-dump")))
config.substitutions.append(("%fhjit-run", os.path.join(tools, "fhjit-run")))
config.substitutions.append(("%examples", os.path.join(config.fhjit_src_root, "examples")))
config.substitutions.append(("FileCheck", config.filecheck))
if config.not_tool:
    config.substitutions.append(("not ", config.not_tool + " "))
if config.ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas-verify", config.ptxas + " -arch=sm_90 -o /dev/null"))
else:
    lit_config.note("ptxas not found: PTX validation tests are skipped")
    config.substitutions.append(("%ptxas-verify", "true"))

# The ASan + UBSan build (FHJIT_SANITIZE): feature asan. A test marked
# UNSUPPORTED: asan is skipped there only when its whole cost is host runs
# (fhjit-run --check) whose code a unit or fuzz test already runs under the
# sanitizers (the test says which); parser, diagnostic and error tests
# (diag/) always run there (docs/testing.md).
if getattr(config, "sanitize", "").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

# Execution on the GPU needs a driver; detected once, here.
def _has_cuda_driver():
    try:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        return lib.cuInit(0) == 0
    except OSError:
        return False
if _has_cuda_driver():
    config.available_features.add("cuda-driver")
else:
    lit_config.note("no CUDA driver: tests that REQUIRE cuda-driver are skipped")

for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "FHJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
