"""Option and value parsing: shared options, values, times, bodies, completion."""
