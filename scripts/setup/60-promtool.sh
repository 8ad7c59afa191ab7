# promtool (Debian prometheus): the Prometheus text exposition of `smolsweep scan --format
# prometheus` is checked with `promtool check metrics`, as node_exporter's operators would.
if ! command -v promtool >/dev/null 2>&1; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus
fi
