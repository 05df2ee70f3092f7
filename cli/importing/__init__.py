"""`conv import` / `risk import`: reading files, planning operations, running, reporting."""
