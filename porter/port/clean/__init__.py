"""Port passes of the clean phase: Inductor's code cleaned up, kernel by kernel."""
