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


# kernel path: /tmp/porter-inductor-yyexz77_/tmp4yko2dv6/n4/cn4qdngb3flcgntla4yzp2dwo7eq4tbfnqvoswij3l4w4kago54z.py
# Topologically Sorted Source Nodes: [getitem_3, getitem_5, mul, getitem_4, getitem_6, mul_1, sub], Original ATen: [aten.slice, aten.unsqueeze, aten.mul, aten.sub]
# Source node to ATen node mapping:
#   getitem_3 => slice_1
#   getitem_4 => slice_2
#   getitem_5 => unsqueeze
#   getitem_6 => unsqueeze_1
#   mul => mul_14
#   mul_1 => mul_18
#   sub => sub_16
# Graph fragment:
#   %arg3_1 : Tensor "f32[s13, s34, s0][s0*s34, s0, 1]cpu" = PlaceHolder[target=arg3_1]
#   %arg4_1 : Tensor "f32[s13, 32][32, 1]cpu" = PlaceHolder[target=arg4_1]
#   %arg5_1 : Tensor "f32[s13, 32][32, 1]cpu" = PlaceHolder[target=arg5_1]
#   %slice_1 : Tensor "f32[s13, s34, (s0//2)][s0*s34, s0, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg3_1, 2, 0, %floordiv), kwargs = {})
#   %unsqueeze : Tensor "f32[s13, 1, 32][32, 32, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg4_1, 1), kwargs = {})
#   %mul_14 : Tensor "f32[s13, s34, (s0//2)][s34*Max(1, (s0//2)), Max(1, (s0//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_1, %unsqueeze), kwargs = {})
#   %slice_2 : Tensor "f32[s13, s34, s0 - ((s0//2))][s0*s34, s0, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg3_1, 2, %floordiv, 9223372036854775807), kwargs = {})
#   %unsqueeze_1 : Tensor "f32[s13, 1, 32][32, 32, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg5_1, 1), kwargs = {})
#   %mul_18 : Tensor "f32[s13, s34, s0 - ((s0//2))][s34*Max(1, s0 - ((s0//2))), Max(1, s0 - ((s0//2))), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_2, %unsqueeze_1), kwargs = {})
#   %sub_16 : Tensor "f32[s13, s34, (s0//2)][s34*Max(1, (s0//2)), Max(1, (s0//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%mul_14, %mul_18), kwargs = {})
#   return %sub_16
triton_poi_fused_mul_slice_sub_unsqueeze_0 = async_compile.triton('triton_poi_fused_mul_slice_sub_unsqueeze_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i64', 'ks1': 'i64', 'ks2': 'i64', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_mul_slice_sub_unsqueeze_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': set(), 'tiling_scores': {'x': 36864}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_mul_slice_sub_unsqueeze_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ks0, ks1, ks2, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % ks0)
    x3 = xindex // ks0
    x2 = xindex // ks2
    tmp0 = tl.load(in_ptr0 + (x0 + ks1*x3), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (x0 + 32*x2), xmask, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr0 + (ks0 + x0 + ks1*x3), xmask, eviction_policy='evict_last')
    tmp4 = tl.load(in_ptr2 + (x0 + 32*x2), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 * tmp1
    tmp5 = tmp3 * tmp4
    tmp6 = tmp2 - tmp5
    tl.store(out_ptr0 + (x0 + ks1*x3), tmp6, xmask)
''', device_str='cpu')


# kernel path: /tmp/porter-inductor-yyexz77_/tmp4yko2dv6/sl/cslco5v3qugaa5aksgd5bxwxduzzkkhven4t5bfamcihjvvltnkn.py
# Topologically Sorted Source Nodes: [getitem_3, getitem_5, getitem_4, getitem_6, mul_2, mul_3, add], Original ATen: [aten.slice, aten.unsqueeze, aten.mul, aten.add]
# Source node to ATen node mapping:
#   add => add_42
#   getitem_3 => slice_1
#   getitem_4 => slice_2
#   getitem_5 => unsqueeze
#   getitem_6 => unsqueeze_1
#   mul_2 => mul_25
#   mul_3 => mul_29
# Graph fragment:
#   %arg3_1 : Tensor "f32[s13, s34, s0][s0*s34, s0, 1]cpu" = PlaceHolder[target=arg3_1]
#   %arg4_1 : Tensor "f32[s13, 32][32, 1]cpu" = PlaceHolder[target=arg4_1]
#   %arg5_1 : Tensor "f32[s13, 32][32, 1]cpu" = PlaceHolder[target=arg5_1]
#   %slice_1 : Tensor "f32[s13, s34, (s0//2)][s0*s34, s0, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg3_1, 2, 0, %floordiv), kwargs = {})
#   %unsqueeze : Tensor "f32[s13, 1, 32][32, 32, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg4_1, 1), kwargs = {})
#   %slice_2 : Tensor "f32[s13, s34, s0 - ((s0//2))][s0*s34, s0, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg3_1, 2, %floordiv, 9223372036854775807), kwargs = {})
#   %unsqueeze_1 : Tensor "f32[s13, 1, 32][32, 32, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%arg5_1, 1), kwargs = {})
#   %mul_25 : Tensor "f32[s13, s34, s0 - ((s0//2))][s34*Max(1, s0 - ((s0//2))), Max(1, s0 - ((s0//2))), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_2, %unsqueeze), kwargs = {})
#   %mul_29 : Tensor "f32[s13, s34, (s0//2)][s34*Max(1, (s0//2)), Max(1, (s0//2)), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%slice_1, %unsqueeze_1), kwargs = {})
#   %add_42 : Tensor "f32[s13, s34, s0 - ((s0//2))][s34*Max(1, s0 - ((s0//2))), Max(1, s0 - ((s0//2))), 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_25, %mul_29), kwargs = {})
#   return %add_42
triton_poi_fused_add_mul_slice_unsqueeze_1 = async_compile.triton('triton_poi_fused_add_mul_slice_unsqueeze_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i64', 'ks1': 'i64', 'ks2': 'i64', 'ks3': 'i64', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_add_mul_slice_unsqueeze_1', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': set(), 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_mul_slice_unsqueeze_1(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ks0, ks1, ks2, ks3, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % ks0)
    x3 = xindex // ks0
    x2 = xindex // ks3
    tmp0 = tl.load(in_ptr0 + (ks1 + x0 + ks2*x3), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (x0 + 32*x2), xmask, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr0 + (x0 + ks2*x3), xmask, eviction_policy='evict_last')
    tmp4 = tl.load(in_ptr2 + (x0 + 32*x2), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 * tmp1
    tmp5 = tmp3 * tmp4
    tmp6 = tmp2 + tmp5
    tl.store(out_ptr0 + (x0 + ks2*x3), tmp6, xmask)
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
        s85 = arg0_1
        s34 = arg1_1
        s0 = arg2_1
        arg3_1_size = arg3_1.size()
        s13 = arg3_1_size[0]
        s56 = s13
        assert_size_stride(arg3_1, (s13, s34, s0), (s0*s34, s0, 1), 'input')
        assert_size_stride(arg4_1, (s13, 32), (32, 1), 'input')
        assert_size_stride(arg5_1, (s13, 32), (32, 1), 'input')
        ps0 = s0 // 2
        ps1 = s34*(s0 // 2)
        buf2 = empty_strided_cpu((s13, s34, s0), (s0*s34, s0, 1), torch.float32)
        buf0 = reinterpret_tensor(buf2, (s13, s34, s0 // 2), (s0*s34, s0, 1), 0)  # alias
        # Topologically Sorted Source Nodes: [getitem_3, getitem_5, mul, getitem_4, getitem_6, mul_1, sub], Original ATen: [aten.slice, aten.unsqueeze, aten.mul, aten.sub]
        triton_poi_fused_mul_slice_sub_unsqueeze_0_xnumel = s13*s34*(s0 // 2)
        raw_streamNone = get_raw_stream(None)
        triton_poi_fused_mul_slice_sub_unsqueeze_0.run(arg3_1, arg4_1, arg5_1, buf0, ps0, s0, ps1, triton_poi_fused_mul_slice_sub_unsqueeze_0_xnumel, stream=raw_streamNone)
        ps2 = s0 + (-1)*(s0 // 2)
        ps3 = s0*s34 + (-1)*s34*(s0 // 2)
        buf1 = reinterpret_tensor(buf2, (s13, s34, s0 + (-1)*(s0 // 2)), (s0*s34, s0, 1), s0 // 2)  # alias
        # Topologically Sorted Source Nodes: [getitem_3, getitem_5, getitem_4, getitem_6, mul_2, mul_3, add], Original ATen: [aten.slice, aten.unsqueeze, aten.mul, aten.add]
        triton_poi_fused_add_mul_slice_unsqueeze_1_xnumel = s0*s13*s34 + (-1)*s13*s34*(s0 // 2)
        raw_streamNone = get_raw_stream(None)
        triton_poi_fused_add_mul_slice_unsqueeze_1.run(arg3_1, arg4_1, arg5_1, buf1, ps2, ps0, s0, ps3, triton_poi_fused_add_mul_slice_unsqueeze_1_xnumel, stream=raw_streamNone)
        del arg3_1
        del arg4_1
        del arg5_1
        return (buf2, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = 16
    arg1_1 = 4
    arg2_1 = 64
    arg3_1 = rand_strided((16, 4, 64), (256, 64, 1), device='cpu', dtype=torch.float32)
    arg4_1 = rand_strided((16, 32), (32, 1), device='cpu', dtype=torch.float32)
    arg5_1 = rand_strided((16, 32), (32, 1), device='cpu', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
