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


# kernel path: /tmp/porter-inductor-fxwqww6o/tmp36sk0qu1/gp/cgpre5xogkwnsjbitpt6334dvjavmiksd3xfn6bcirwqri2tv6df.py
# Topologically Sorted Source Nodes: [abs_1, amax, clamp, scale, truediv_1, round_1, clamp_1, q], Original ATen: [aten.abs, aten.amax, aten.clamp, aten.div, aten.round, aten._to_copy]
# Source node to ATen node mapping:
#   abs_1 => abs_1
#   amax => amax
#   clamp => clamp_min
#   clamp_1 => clamp_max, clamp_min_1
#   q => convert_element_type
#   round_1 => round_1
#   scale => div
#   truediv_1 => div_1
# Graph fragment:
#   %arg2_1 : Tensor "f32[s77, s27][s27, 1]cpu" = PlaceHolder[target=arg2_1]
#   %amax : Tensor "f32[s77, 1][1, s77]cpu" = PlaceHolder[target=amax]
#   %div : Tensor "f32[s77, 1][1, 1]cpu" = PlaceHolder[target=div]
#   %abs_1 : Tensor "f32[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.abs.default](args = (%arg2_1,), kwargs = {})
#   %amax : Tensor "f32[s77, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.amax.default](args = (%abs_1, [-1], True), kwargs = {})
#   %clamp_min : Tensor "f32[s77, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.clamp_min.default](args = (%amax, 1e-10), kwargs = {})
#   %div : Tensor "f32[s77, 1][1, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.div.Tensor](args = (%clamp_min, 127.0), kwargs = {})
#   %div_1 : Tensor "f32[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%arg2_1, %div), kwargs = {})
#   %round_1 : Tensor "f32[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.round.default](args = (%div_1,), kwargs = {})
#   %clamp_min_1 : Tensor "f32[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.clamp_min.default](args = (%round_1, -128), kwargs = {})
#   %clamp_max : Tensor "f32[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.clamp_max.default](args = (%clamp_min_1, 127), kwargs = {})
#   %convert_element_type : Tensor "i8[s77, s27][s27, 1]cpu"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%clamp_max, torch.int8), kwargs = {})
#   return %amax,%div,%convert_element_type
triton_red_fused__to_copy_abs_amax_clamp_div_round_0 = async_compile.triton('triton_red_fused__to_copy_abs_amax_clamp_div_round_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.reduction(
    size_hints={'x': 16, 'r0_': 1024},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'out_ptr0': '*i8', 'ks0': 'i64', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_red_fused__to_copy_abs_amax_clamp_div_round_0', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 2, 'num_reduction': 1, 'autotune_hints': set(), 'tiling_scores': {'x': 128, 'r0_': 98304}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False}
)
@triton.jit
def triton_red_fused__to_copy_abs_amax_clamp_div_round_0(in_out_ptr0, in_ptr0, out_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp3 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl_math.abs(tmp0)
        tmp2 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])
        tmp4 = triton_helpers.maximum(_tmp3, tmp2)
        _tmp3 = tl.where(r0_mask & xmask, tmp4, _tmp3)
    tmp3 = triton_helpers.max2(_tmp3, 1)[:, None]
    tmp5 = tl.full([1, 1], 1e-10, tl.float32)
    tmp6 = triton_helpers.maximum(tmp3, tmp5)
    tmp7 = tl.full([1, 1], 127.0, tl.float32)
    tmp8 = (tmp6 / tmp7)
    tl.store(in_out_ptr0 + (x0), tmp8, xmask)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp9 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp10 = (tmp9 / tmp8)
        tmp11 = libdevice.nearbyint(tmp10)
        tmp12 = tl.full([1, 1], -128.0, tl.float32)
        tmp13 = triton_helpers.maximum(tmp11, tmp12)
        tmp14 = triton_helpers.minimum(tmp13, tmp7)
        tmp15 = tmp14.to(tl.int8)
        tl.store(out_ptr0 + (r0_1 + ks0*x0), tmp15, r0_mask & xmask)
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
        buf0 = empty_strided_cpu((s77, 1), (1, s77), torch.float32)
        buf1 = reinterpret_tensor(buf0, (s77, 1), (1, 1), 0); del buf0  # reuse
        buf2 = empty_strided_cpu((s77, s27), (s27, 1), torch.int8)
        # Topologically Sorted Source Nodes: [abs_1, amax, clamp, scale, truediv_1, round_1, clamp_1, q], Original ATen: [aten.abs, aten.amax, aten.clamp, aten.div, aten.round, aten._to_copy]
        raw_streamNone = get_raw_stream(None)
        triton_red_fused__to_copy_abs_amax_clamp_div_round_0.run(buf1, arg2_1, buf2, s27, s77, s27, stream=raw_streamNone)
        del arg2_1
        return (buf2, buf1, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = 16
    arg1_1 = 1024
    arg2_1 = rand_strided((16, 1024), (1024, 1), device='cpu', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
