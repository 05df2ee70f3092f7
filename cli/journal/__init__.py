"""The journal of writes and undo: the journaled backend, undo's choice, plan and writes."""
