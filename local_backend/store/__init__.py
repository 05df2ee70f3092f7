"""The SQLite store: database and migrations, tables, ids, idempotency, export, clock."""
