#!/bin/sh
# Same rule as the official oven/bun image: options and unknown commands run through bun.
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ]; then
  set -- /usr/local/bin/bun "$@"
fi
exec "$@"
