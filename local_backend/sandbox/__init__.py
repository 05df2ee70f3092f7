"""The service played locally: wire rules, OpenAPI document, admin routes, request journal,
snapshots, contract."""
