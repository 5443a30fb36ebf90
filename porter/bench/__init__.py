"""Stage: benchmark a ported kernel against Inductor and eager, decode to prefill.

For each point of the sweep (num_tokens x dtype at the case's model sizes):
check the scaffold's parity first, then time four things with
`triton.testing.do_bench` medians (it flushes L2 between runs) and again as
CUDA-graph replays (kernel-only time; host overhead dominates decode sizes):
the ported launcher, torch.compile with the capture's dynamic dims compiled
once, torch.compile with static shapes (one specialization per point), and
eager. Bandwidth is counted as each input read once plus each output written
once, against a device-to-device copy measured in the same run.

The GPU parts need CUDA; sweep generation, byte counting and the report,
table and plot rendering are plain Python (unit-tested on the CPU).

One module a job: points (the sweep), timing (the GPU), fingerprint (the
code a row timed), report (the tables and the README).
"""
