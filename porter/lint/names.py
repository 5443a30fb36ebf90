"""Name heuristics shared by the rules.

A static linter cannot see values, so several rules guess a variable's role
from its name, the way a reviewer does. Every such guess lives here, so tuning
one (say, a new spelling of the token count) changes every rule consistently.
"""

from __future__ import annotations

import re

# Sizes that change from one call to the next: token counts, batch, rows, numel.
_RUNTIME_SIZE = re.compile(
    r"""^(
        .*tokens?(_.*)?           # num_tokens, n_tokens, total_tokens, num_tokens_post_padded
      | (max_|total_)?(num|n)_?(rows|seqs?|reqs|requests|elements|elems|batch(es)?)
      | n_?elements | numel | [xyz]numel | [xyz]_numel
      | batch | batch_size | bs | bsz
      | (max_)?seq_?lens? | (max_)?seqlen(_[qk])?
    )$""",
    re.VERBOSE,
)
# Single capitals that conventionally mean a runtime size. Only M: in GEMM
# code N and K are usually weight dimensions, fixed per model.
_RUNTIME_SIZE_EXACT = {"M"}

# Per-model sizes: fixed for a deployed model, safe as grid dims and specialization.
_PER_MODEL = re.compile(
    r"(head|hidden|dim|col|vocab|expert|size|width|height|channel|feature|rank|group|block)"
)
_PER_MODEL_EXACT = {"N", "K", "D", "H", "E"}

# Pointers: `x_ptr`, `out_ptrs`, Inductor's `in_ptr0`, `in_out_ptr1`.
_POINTER = re.compile(r"(^|_)ptrs?\d*$|ptr\d*$", re.IGNORECASE)

# Runtime flags that alternate 0/1 between calls.
_FLAG = re.compile(r"^(is|has|use|enable|apply|do)_.+|.+_flag$", re.IGNORECASE)

# Float scalars: epsilon, scales, temperatures.
_FLOAT_SCALAR = re.compile(
    r"""^(
        eps | epsilon | .+_eps | eps_.+
      | (.+_)?scale(_.+)? | .*_scale | scaling(_.+)?
      | alpha | beta | temperature | momentum | lr | weight_decay
      | negative_slope | dropout_p | p_drop | drop_p | .*softcap.* | logit_cap | .+_cap
      | min_p | top_p | .+_factor
    )$""",
    re.VERBOSE | re.IGNORECASE,
)

# Integers that by convention are never negative: sizes, counts, strides.
_NON_NEGATIVE = re.compile(
    r"""(
        ^(n|num|max|total)_ | ^[mnkdhtble]s?$ | ^bsz?$
      | ^ks\d+$                     # Inductor's symbolic sizes under dynamic shapes
      | size | len | numel | count | stride | dim | rows | cols | token | head | batch
      | width | height | elem | block | group | hidden | vocab | expert | chunk | tile
    )""",
    re.VERBOSE | re.IGNORECASE,
)


# Pointers whose elements are integers (indices, lengths, tables, flags), so a
# load from them is not low-precision float data.
_INT_DATA_POINTER = re.compile(
    r"(idx|index|indices|offset|ids|mapping|table|loc|pos|start|end|seq|len|count"
    r"|num|mask|flag|lock|sem|counter|expert|token|slot|block|page|batch|req)",
    re.IGNORECASE,
)


def is_runtime_size(name: str) -> bool:
    if name in _RUNTIME_SIZE_EXACT:
        return True
    low = name.lower()
    if "stride" in low or name.isupper() and len(name) == 1:
        return False
    return bool(_RUNTIME_SIZE.match(low))


def is_per_model(name: str) -> bool:
    return name.upper() in _PER_MODEL_EXACT or bool(_PER_MODEL.search(name.lower()))


# Words that name a size without saying of what: `size = x.shape[0]` may
# well be a token count.
_BARE_SIZE_WORDS = {"size", "dim", "block", "group", "width", "height", "col", "cols"}


def names_a_model_dim(name: str) -> bool:
    """A descriptive per-model name (out_features, hidden_size): not a single
    capital (`N` is a weight dim in GEMM code, `n` a row count), nor a bare
    `size`."""
    low = name.lower()
    return (
        low not in _BARE_SIZE_WORDS and len(name) > 1 and bool(_PER_MODEL.search(low))
    )


def is_head_count(name: str) -> bool:
    low = name.lower()
    return "head" in low and not any(w in low for w in ("dim", "size", "stride"))


def is_pointer_name(name: str) -> bool:
    return bool(_POINTER.search(name))


def is_flag_name(name: str) -> bool:
    return bool(_FLAG.match(name))


def is_float_scalar_name(name: str) -> bool:
    return bool(_FLOAT_SCALAR.match(name))


def is_non_negative_name(name: str) -> bool:
    return bool(_NON_NEGATIVE.search(name))


def is_stride_name(name: str) -> bool:
    return "stride" in name.lower()


def is_int_data_pointer(name: str) -> bool:
    return bool(_INT_DATA_POINTER.search(name))


def decode_only(*words: str) -> bool:
    """Kernel, launcher or file names that say decode and not prefill (vLLM's and
    SGLang's habit): a decode path serves hundreds of sequences, not many tokens."""
    text = " ".join(words).lower()
    return "decode" in text and "prefill" not in text
