"""Pallas GPU kernels for the MLP and the CNN, one module per kernel, each with a plain-JAX `*_reference` beside it.

On the GPU they lower through Triton, except conv2d_tma, which lowers through Mosaic GPU (Hopper's TMA copies and
warpgroup MMAs); on a CPU they run only with interpret=True (tests).
Read ../shared/docs/pallas-gpu.md before changing one: power-of-two block shapes, no scratch buffers under Triton,
and interpret mode hides races and out-of-bounds reads, so every kernel is also tested on the GPU.
"""
