"""The client's defaults and the interface's page bounds, in one place (cli settings read them).

No imports: the command line reads these without loading the client.
"""

# `limit` of one list request: 1 to MAX_LIMIT, DEFAULT_LIMIT when not given (DESIGN 1).
MAX_LIMIT = 100
DEFAULT_LIMIT = 10
# Items asked for per request when the Client walks pages: the largest page the service gives.
DEFAULT_PAGE_SIZE = MAX_LIMIT
# Seconds one attempt may take, from connect to last byte, and retries after it (DESIGN 1.2).
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
# What the settings (and Client.remote) take: timeout 0.1 to 3600 s, max_retries 0 to 10.
MIN_TIMEOUT, MAX_TIMEOUT = 0.1, 3600
MAX_RETRIES = 10
# The most one answer may weigh once decoded: a page of 100 risk profiles with up to 1 MiB of
# details each is about 100 MiB, so this fits the largest legitimate page with room.
DEFAULT_MAX_RESPONSE_MB = 256
# A number in a body (a score), integer or float: within the store's 64-bit integers, kept
# symmetric. Floats are bounded too (JSON Schema counts 2.5e300 as an integer), and at -2**63
# validators judge a float each in their own way; at +-(2**63 - 1) they all agree with Python.
MIN_NUMBER, MAX_NUMBER = -(2**63 - 1), 2**63 - 1
# A timestamp in a body: Unix seconds from 1970 to the end of 9999 (what a date can show).
MAX_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z
