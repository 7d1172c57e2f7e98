#!/usr/bin/env bash
# Installs what sluice needs on a Debian machine, when it is missing:
#   postgresql    server binaries: the demo and the tests start their own throwaway cluster
#   libpq-dev     the PostgreSQL client library sluice links (connection strings, .pgpass, TLS)
#   libclang-dev  used once at build time to generate the libpq bindings
#   chromium      the tests open the report's chart in a headless browser
#   openssl       the TLS test makes a self-signed certificate
#   pgbouncer     a test loads through a connection pooler in transaction mode
#   locales       a test makes a German locale, for the server's messages in another language
# The Rust toolchain is expected to be present.
set -euo pipefail
need=()
for pkg in postgresql libpq-dev libclang-dev chromium openssl pgbouncer locales; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q "${need[@]}"
fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
