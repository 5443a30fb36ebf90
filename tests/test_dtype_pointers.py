"""Before/after tests for finish.dtype_pointers: a buffer a kernel takes for
its dtype alone (the rounding of a value forms.scratch recomputes) is not
allocated; the kernel names the dtype another way."""

import ast
import textwrap
from types import SimpleNamespace

from porter.port.finish.dtype_pointers import drop_dtype_pointers
from porter.port.model import KernelPort
from porter.records import KernelRecord

KERNEL = """\
def k(residual_ptr, x_ptr, scratch_ptr, n, scratch_stride0, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    r = tl.load(residual_ptr + cols).to(tl.float32)
    s = (r + 1.0).to(scratch_ptr.dtype.element_ty).to(tl.float32)
    tl.store(x_ptr + cols, s.to(x_ptr.dtype.element_ty))
"""


def _port(kernel: str = KERNEL, dtype: str = "residual.dtype"):
    p = SimpleNamespace
    params = [
        p(name="residual_ptr", kind="pointer", value="residual", view=""),
        p(name="x_ptr", kind="pointer", value="x", view=""),
        p(name="scratch_ptr", kind="pointer", value="scratch_buf1", view=""),
        p(name="n", kind="runtime", value="n", view=""),
        p(name="scratch_stride0", kind="stride", value="scratch_buf1.stride(0)"),
    ]
    form = ast.parse(textwrap.dedent(kernel)).body[0]
    record = KernelRecord("k", kernel, "pointwise", [], {}, None, None, 0)
    kp = KernelPort(record, None, tree=form, params=params)
    kp.form = form
    step = p(args=[(q.name, q.value) for q in params])
    launcher = p(allocs=[p(var="scratch_buf1", dtype=dtype)])
    return p(kernels=[kp], launches=lambda: [step], launcher=launcher, notes=[])


def test_the_dtype_comes_from_the_tensor_the_buffer_followed():
    port = _port()
    drop_dtype_pointers(port)
    kp, step = port.kernels[0], port.launches()[0]
    text = ast.unparse(kp.form)
    assert "(r + 1.0).to(residual_ptr.dtype.element_ty)" in text
    assert "scratch" not in text
    assert [q.name for q in kp.params] == ["residual_ptr", "x_ptr", "n"]
    assert [n for n, _ in step.args] == ["residual_ptr", "x_ptr", "n"]
    assert port.notes


def test_a_fixed_dtype_is_spelled_as_itself():
    port = _port(dtype="torch.bfloat16")
    drop_dtype_pointers(port)
    assert "(r + 1.0).to(tl.bfloat16)" in ast.unparse(port.kernels[0].form)


def test_a_buffer_the_kernel_still_reads_stays():
    kernel = KERNEL + "    tl.store(scratch_ptr + cols, s)\n"
    port = _port(kernel)
    drop_dtype_pointers(port)
    assert len(port.kernels[0].params) == 5 and not port.notes
