"""convrisk: the command-line tool (`convrisk.cli`), the client and contract (`convrisk.api_client`)
and the local store and sandbox server (`convrisk.local_backend`).

The three packages live in the repository's top-level folders `cli/`, `api_client/` and
`local_backend/`; this folder links them under one name (see docs/design/command-line.md,
"Packages, one namespace, layers").
"""
