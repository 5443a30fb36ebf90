# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph

def get_raw_stream(_):
    return 0


aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/porter-inductor-l6ipyams/tmp_kdm8tot/yt/cytjpnuozk4cycayymlfcxbr3eeyczuqczcqu3nxkz2sizx72u46.py
# Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]
# Source node to ATen node mapping:
#   gelu => add_10, add_11, mul_10, mul_11, mul_6, mul_7, mul_8, mul_9, tanh
# Graph fragment:
#   %addmm_default : Tensor "f32[s77, s23][s23, 1]cpu" = PlaceHolder[target=addmm_default]
#   %mul_10 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%addmm_default, 0.5), kwargs = {})
#   %mul_6 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%addmm_default, %addmm_default), kwargs = {})
#   %mul_7 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_6, %addmm_default), kwargs = {})
#   %mul_8 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_7, 0.044715), kwargs = {})
#   %add_10 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%addmm_default, %mul_8), kwargs = {})
#   %mul_9 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_10, 0.7978845608028654), kwargs = {})
#   %tanh : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.tanh.default](args = (%mul_9,), kwargs = {})
#   %add_11 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%tanh, 1), kwargs = {})
#   %mul_11 : Tensor "f32[s77, s23][s23, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_10, %add_11), kwargs = {})
#   return %mul_11
triton_poi_fused_gelu_0 = async_compile.triton('triton_poi_fused_gelu_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.pointwise(
    size_hints={'x': 8192}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_gelu_0', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': set(), 'tiling_scores': {'x': 98304}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_gelu_0(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), xmask)
    tmp1 = tl.full([1], 0.5, tl.float32)
    tmp2 = tmp0 * tmp1
    tmp3 = tmp0 * tmp0
    tmp4 = tmp3 * tmp0
    tmp5 = tl.full([1], 0.044715, tl.float32)
    tmp6 = tmp4 * tmp5
    tmp7 = tmp0 + tmp6
    tmp8 = tl.full([1], 0.7978845608028654, tl.float32)
    tmp9 = tmp7 * tmp8
    tmp10 = libdevice.tanh(tmp9)
    tmp11 = tl.full([1], 1.0, tl.float32)
    tmp12 = tmp10 + tmp11
    tmp13 = tmp2 * tmp12
    tl.store(in_out_ptr0 + (x0), tmp13, xmask)
''', device_str='cpu')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1 = args
        args.clear()
        s36 = arg0_1
        s85 = arg1_1
        s77 = arg3_1
        arg2_1_size = arg2_1.size()
        s23 = arg2_1_size[0]
        s27 = arg2_1_size[1]
        assert_size_stride(arg5_1, (s23, ), (1, ), 'input')
        assert_size_stride(arg4_1, (s77, s27), (s27, 1), 'input')
        assert_size_stride(arg2_1, (s23, s27), (s27, 1), 'input')
        buf0 = empty_strided_cpu((s77, s23), (s23, 1), torch.float32)
        # Topologically Sorted Source Nodes: [t, add], Original ATen: [aten.t, aten.add]
        extern_kernels.addmm(arg5_1, arg4_1, reinterpret_tensor(arg2_1, (s27, s23), (1, s27), 0), alpha=1, beta=1, out=buf0)
        del arg2_1
        del arg4_1
        del arg5_1
        buf1 = buf0; del buf0  # reuse
        # Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]
        triton_poi_fused_gelu_0_xnumel = s23*s77
        raw_streamNone = get_raw_stream(None)
        triton_poi_fused_gelu_0.run(buf1, triton_poi_fused_gelu_0_xnumel, stream=raw_streamNone)
        return (buf1, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = 256
    arg1_1 = 128
    arg2_1 = rand_strided((256, 128), (128, 1), device='cpu', dtype=torch.float32)
    arg3_1 = 32
    arg4_1 = rand_strided((32, 128), (128, 1), device='cpu', dtype=torch.float32)
    arg5_1 = rand_strided((256, ), (1, ), device='cpu', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
