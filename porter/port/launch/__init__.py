"""Port passes of the launch phase: kernels fused and named, the launcher planned."""
