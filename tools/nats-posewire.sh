#!/bin/sh
# Start nats-server with docs/nats-posewire.conf (docs/cluster.md, spec §5.7.1 rule 7),
# refusing empty or unset passwords: nats-server takes an empty $VAR as the password "",
# which lets anyone in as that user. Extra arguments go to nats-server
# (e.g. -sd /var/lib/nats -a 10.0.0.5 -p 4222).
set -eu
for var in POSEWIRE_RELAY1_PASS POSEWIRE_RELAY2_PASS POSEWIRE_RELAY3_PASS POSEWIRE_MONITOR_PASS APPS_PASS; do
    eval "value=\${$var:-}"
    if [ -z "$value" ]; then
        echo "nats-posewire: \$$var is empty or unset: refusing to start (an empty password lets anyone in)" >&2
        exit 2
    fi
done
conf="${NATS_POSEWIRE_CONF:-$(dirname "$0")/../docs/nats-posewire.conf}"
exec "${NATS_SERVER:-nats-server}" -c "$conf" -js "$@"
