"""Port passes of the start phase: the capture split into one kernel a launch."""
