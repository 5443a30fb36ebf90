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


# kernel path: /tmp/porter-inductor-kq94_xma/tmp8klup447/gb/cgb3cjcfqegllbpsmsai5sdcq3rb7eooyt3jjtuqtifie5rkgorv.py
# Topologically Sorted Source Nodes: [softmax], Original ATen: [aten.div, aten.eq, aten.abs, aten.ne, aten.mul, aten.all, aten.amax, aten.sub, aten._softmax]
# Source node to ATen node mapping:
#   softmax => div_1, exp, sum_1, where_self
# Graph fragment:
#   %arg2_1 : Tensor "f32[s88, s3][s3, 1]cpu" = PlaceHolder[target=arg2_1]
#   %any_dims : Tensor "b8[s88, 1][1, s88]cpu" = PlaceHolder[target=any_dims]
#   %amax_default : Tensor "f32[s88, 1][1, s88]cpu" = PlaceHolder[target=amax_default]
#   %amax_default_1 : Tensor "f32[s88, 1][1, s88]cpu" = PlaceHolder[target=amax_default_1]
#   %exp : Tensor "f32[s88, s3][s3, 1]cpu" = PlaceHolder[target=exp]
#   %sum_1 : Tensor "f32[s88, 1][1, s88]cpu" = PlaceHolder[target=sum_1]
#   %div_tensor : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=4] = call_function[target=torch.ops.aten.div.Tensor](args = (%arg2_1, 0.7), kwargs = {})
#   %eq_tensor : Tensor "b8[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.eq.Tensor](args = (%div_tensor, %div_tensor), kwargs = {})
#   %abs_default : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.abs.default](args = (%div_tensor,), kwargs = {})
#   %ne_scalar : Tensor "b8[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%abs_default, inf), kwargs = {})
#   %mul_tensor_1 : Tensor "b8[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%eq_tensor, %ne_scalar), kwargs = {})
#   %logical_not_default : Tensor "b8[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.logical_not.default](args = (%mul_tensor_1,), kwargs = {})
#   %any_dims : Tensor "b8[s88, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.any.dims](args = (%logical_not_default, [-1], True), kwargs = {})
#   %logical_not_default_1 : Tensor "b8[s88, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.logical_not.default](args = (%any_dims,), kwargs = {})
#   %mul_tensor : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%arg2_1, 1), kwargs = {})
#   %amax_default : Tensor "f32[s88, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.amax.default](args = (%mul_tensor, [-1], True), kwargs = {})
#   %sub_tensor : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%mul_tensor, %amax_default), kwargs = {})
#   %div_tensor_1 : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%sub_tensor, 0.7), kwargs = {})
#   %amax_default_1 : Tensor "f32[s88, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.amax.default](args = (%div_tensor, [-1], True), kwargs = {})
#   %sub_tensor_1 : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%div_tensor, %amax_default_1), kwargs = {})
#   %where_self : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%logical_not_default_1, %div_tensor_1, %sub_tensor_1), kwargs = {})
#   %exp : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=2] = call_function[target=torch.ops.aten.exp.default](args = (%where_self,), kwargs = {})
#   %sum_1 : Tensor "f32[s88, 1][1, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%exp, [-1], True), kwargs = {})
#   %div_1 : Tensor "f32[s88, s3][s3, 1]cpu"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%exp, %sum_1), kwargs = {})
#   return %any_dims,%amax_default,%amax_default_1,%exp,%sum_1,%div_1
triton_red_fused__softmax_abs_all_amax_div_eq_mul_ne_sub_0 = async_compile.triton('triton_red_fused__softmax_abs_all_amax_div_eq_mul_ne_sub_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_cpu()

@triton_heuristics.reduction(
    size_hints={'x': 4, 'r0_': 32768},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'ks0': 'i64', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, max_threads_per_block=1024, warp_size=None), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_red_fused__softmax_abs_all_amax_div_eq_mul_ne_sub_0', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 3, 'num_store': 2, 'num_reduction': 4, 'autotune_hints': set(), 'tiling_scores': {'x': 0, 'r0_': 1572864}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': True, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False}
)
@triton.jit
def triton_red_fused__softmax_abs_all_amax_div_eq_mul_ne_sub_0(in_out_ptr0, in_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp10 = tl.full([XBLOCK, R0_BLOCK], False, tl.int1)
    _tmp16 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    _tmp19 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.full([1, 1], 0.7, tl.float32)
        tmp2 = (tmp0 / tmp1)
        tmp3 = tmp2 == tmp2
        tmp4 = tl_math.abs(tmp2)
        tmp5 = tl.full([1, 1], float("inf"), tl.float32)
        tmp6 = tmp4 != tmp5
        tmp7 = tmp3 & tmp6
        tmp8 = tmp7 == 0
        tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
        tmp11 = _tmp10 | tmp9
        _tmp10 = tl.where(r0_mask & xmask, tmp11, _tmp10)
        tmp13 = tl.full([1, 1], 1.0, tl.float32)
        tmp14 = tmp0 * tmp13
        tmp15 = tl.broadcast_to(tmp14, [XBLOCK, R0_BLOCK])
        tmp17 = triton_helpers.maximum(_tmp16, tmp15)
        _tmp16 = tl.where(r0_mask & xmask, tmp17, _tmp16)
        tmp18 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])
        tmp20 = triton_helpers.maximum(_tmp19, tmp18)
        _tmp19 = tl.where(r0_mask & xmask, tmp20, _tmp19)
    tmp12 = _tmp10.to(tl.int8)
    tmp10 = triton_helpers.any(tmp12, 1)[:, None]
    tmp16 = triton_helpers.max2(_tmp16, 1)[:, None]
    tmp19 = triton_helpers.max2(_tmp19, 1)[:, None]
    _tmp33 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp22 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp21 = tmp10 == 0
        tmp23 = tl.full([1, 1], 1.0, tl.float32)
        tmp24 = tmp22 * tmp23
        tmp25 = tmp24 - tmp16
        tmp26 = tl.full([1, 1], 0.7, tl.float32)
        tmp27 = (tmp25 / tmp26)
        tmp28 = (tmp22 / tmp26)
        tmp29 = tmp28 - tmp19
        tmp30 = tl.where(tmp21, tmp27, tmp29)
        tmp31 = libdevice.exp(tmp30)
        tmp32 = tl.broadcast_to(tmp31, [XBLOCK, R0_BLOCK])
        tmp34 = _tmp33 + tmp32
        _tmp33 = tl.where(r0_mask & xmask, tmp34, _tmp33)
        tl.store(in_out_ptr0 + (r0_1 + ks0*x0), tmp31, r0_mask & xmask)
    tmp33 = tl.sum(_tmp33, 1)[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp35 = tl.load(in_out_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp36 = (tmp35 / tmp33)
        tl.store(in_out_ptr0 + (r0_1 + ks0*x0), tmp36, r0_mask & xmask)
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
        s88 = arg0_1
        s3 = arg1_1
        assert_size_stride(arg2_1, (s88, s3), (s3, 1), 'input')
        buf3 = empty_strided_cpu((s88, s3), (s3, 1), torch.float32)
        buf5 = buf3; del buf3  # reuse
        # Topologically Sorted Source Nodes: [softmax], Original ATen: [aten.div, aten.eq, aten.abs, aten.ne, aten.mul, aten.all, aten.amax, aten.sub, aten._softmax]
        raw_streamNone = get_raw_stream(None)
        triton_red_fused__softmax_abs_all_amax_div_eq_mul_ne_sub_0.run(buf5, arg2_1, s3, s88, s3, stream=raw_streamNone)
        del arg2_1
        return (buf5, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = 4
    arg1_1 = 32768
    arg2_1 = rand_strided((4, 32768), (32768, 1), device='cpu', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
