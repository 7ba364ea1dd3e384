"""A kernel's source as the kernel table keeps it: from a JIT wrapper module (kernel_code) and from a
definition an AOTI compile generates (kernel_source). No compile: hand-written wrapper text."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from pt2diff_worker import kernel_map  # noqa: E402

TRITON = "@triton.jit\ndef triton_poi_fused_relu_0(in_ptr0, xnumel):\n    pass\n"
CPP = 'extern "C" void cpp_fused_relu_0(float* in_out_ptr0) { in_out_ptr0[0] = 1.01f; }'


class KernelSource(unittest.TestCase):
    def test_a_triton_definition_gives_its_source_and_cpp_stays_as_is(self):
        call = f"async_compile.triton('triton_poi_fused_relu_0', '''{TRITON}''', device_str='cuda')"
        self.assertEqual(kernel_map.kernel_source(call), TRITON)
        self.assertEqual(kernel_map.kernel_source(CPP), CPP)

    def test_a_jit_wrapper_gives_the_source_of_each_kernel_asked_for(self):
        wrapper = (f"cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r'''{CPP}''')\n"
                   f"triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', '''{TRITON}''')\n"
                   "other = async_compile.triton('other', 'x')\n")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(wrapper)
        try:
            code = kernel_map.kernel_code([f.name], {"cpp_fused_relu_0", "triton_poi_fused_relu_0"})
        finally:
            os.remove(f.name)
        self.assertEqual(code, {"cpp_fused_relu_0": CPP, "triton_poi_fused_relu_0": TRITON})


if __name__ == "__main__":
    unittest.main()
