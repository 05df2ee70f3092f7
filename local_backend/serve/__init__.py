"""`convrisk serve`: the server, ASGI app, uvicorn protocols, access log, faults, proxy, token,
memory."""
