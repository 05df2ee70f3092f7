#!/usr/bin/env bash
# schemathesis against `convrisk serve` on 127.0.0.1, every check on, with three seeds (each
# finds other cases), bounded in examples and time per seed. Run from the repository root with
# the project's .venv (the `test` extra).
# Extra arguments go to each `schemathesis run` (e.g. --max-examples 100).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
serve_pid=""
stop() {
    if [ -n "$serve_pid" ]; then
        kill -TERM "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop EXIT

token="schemathesis-$(date +%s)-$$"
.venv/bin/convrisk serve --host 127.0.0.1 --port 0 --db "$work/st.db" --token "$token" \
    >"$work/serve.log" 2>&1 &
serve_pid=$!

url=""
for _ in $(seq 100); do
    url=$(sed -n 's/^convrisk serve: listening on //p' "$work/serve.log")
    [ -n "$url" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "convrisk serve did not start:" >&2
    cat "$work/serve.log" >&2
    exit 1
fi

# As schemathesis's docs say: no config file, no hooks (docs/design/serve.md, "The OpenAPI
# document").
status=0
for seed in 20261122 7 31337; do
    echo "--- schemathesis, seed $seed ---"
    timeout 200 \
        .venv/bin/schemathesis run "$url/openapi.json" \
        --header "Authorization: Bearer $token" \
        --checks all \
        --max-examples 25 \
        --max-time 60 \
        --request-timeout 10 \
        --seed "$seed" \
        --no-color \
        "$@" || status=$?
    [ "$status" -eq 0 ] || break
done
if [ "$status" -ne 0 ]; then
    echo "--- convrisk serve log (last 40 lines) ---" >&2
    tail -40 "$work/serve.log" >&2
fi
exit "$status"
