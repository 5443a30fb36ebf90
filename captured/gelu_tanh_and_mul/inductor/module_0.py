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


# kernel path: /tmp/porter-inductor-6fucnxqh/tmphkyrsis8/ef/cef56ds6pxjleangx73d43khnqipfxsrl5rqkfuyen6ghgefoy7b.py
# Topologically Sorted Source Nodes: [getitem_2, gelu, getitem_3, mul], Original ATen: [aten.slice, aten.gelu, aten.mul]
# Source node to ATen node mapping:
#   gelu => add_3, add_4, mul_2, mul_3, mul_4, mul_5, mul_6, mul_7, tanh
#   getitem_2 => slice_1
#   getitem_3 => slice_2
#   mul => mul_12
# Graph fragment:
#   %arg2_1 : Tensor "f32[s77, s27][s27, 1]cpu" = PlaceHolder[target=arg2_1]
#   %slice_1 : Tensor "f32[s77, (s27//2)][s27, 1]cpu"[num_users=4] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg2_1, 1, 0, %floordiv), kwargs = {})
#   %mul_6 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_1, 0.5), kwargs = {})
#   %mul_2 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_1, %slice_1), kwargs = {})
#   %mul_3 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_2, %slice_1), kwargs = {})
#   %mul_4 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_3, 0.044715), kwargs = {})
#   %add_3 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%slice_1, %mul_4), kwargs = {})
#   %mul_5 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_3, 0.7978845608028654), kwargs = {})
#   %tanh : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.tanh.default](args = (%mul_5,), kwargs = {})
#   %add_4 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%tanh, 1), kwargs = {})
#   %mul_7 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_6, %add_4), kwargs = {})
#   %slice_2 : Tensor "f32[s77, s27 - ((s27//2))][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg2_1, 1, %floordiv, 9223372036854775807), kwargs = {})
#   %mul_12 : Tensor "f32[s77, (s27//2)][Max(1, (s27//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_7, %slice_2), kwargs = {})
#   return %mul_12
triton_poi_fused_gelu_mul_slice_0 = async_compile.triton('triton_poi_fused_gelu_mul_slice_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.pointwise(
    size_hints={'x': 16384}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i64', 'ks1': 'i64', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_gelu_mul_slice_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': set(), 'tiling_scores': {'x': 262144}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_gelu_mul_slice_0(in_ptr0, out_ptr0, ks0, ks1, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % ks0)
    x1 = xindex // ks0
    tmp0 = tl.load(in_ptr0 + (x0 + ks1*x1), xmask, eviction_policy='evict_last')
    tmp14 = tl.load(in_ptr0 + (ks0 + x0 + ks1*x1), xmask, eviction_policy='evict_last')
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
    tmp15 = tmp13 * tmp14
    tl.store(out_ptr0 + (x0 + x1*((1) * ((1) >= (ks0)) + (ks0) * ((ks0) > (1)))), tmp15, xmask)
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
        arg0_1, arg1_1, arg2_1 = args
        args.clear()
        s77 = arg0_1
        s27 = arg1_1
        assert_size_stride(arg2_1, (s77, s27), (s27, 1), 'input')
        ps0 = s27 // 2
        buf0 = empty_strided_cpu((s77, s27 // 2), (max(1, s27 // 2), 1), torch.float32)
        # Topologically Sorted Source Nodes: [getitem_2, gelu, getitem_3, mul], Original ATen: [aten.slice, aten.gelu, aten.mul]
        triton_poi_fused_gelu_mul_slice_0_xnumel = s77*(s27 // 2)
        raw_streamNone = get_raw_stream(None)
        triton_poi_fused_gelu_mul_slice_0.run(arg2_1, buf0, ps0, s27, triton_poi_fused_gelu_mul_slice_0_xnumel, stream=raw_streamNone)
        del arg2_1
        return (buf0, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = 32
    arg1_1 = 1024
    arg2_1 = rand_strided((32, 1024), (1024, 1), device='cpu', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
