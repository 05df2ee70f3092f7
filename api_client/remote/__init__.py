"""The remote transport: session, deadline, proxies, retries, failures, the HTTP backend."""
