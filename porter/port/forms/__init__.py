"""Port passes of the forms phase: a reduction's other forms: persistent, single-pass."""
