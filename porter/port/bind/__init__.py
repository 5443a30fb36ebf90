"""Port passes of the bind phase: parameters bound to the launch, dtypes made explicit, names given."""
