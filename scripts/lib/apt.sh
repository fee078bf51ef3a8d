# Sourced by scripts/setup.sh and .ci/run.
# Debian's packages, installed when missing (as root with apt-get), or a sentence naming them.
apt_install() {  # apt_install "what they are for" PACKAGE...
  local why=$1
  shift
  if command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing Debian's $* ($why)..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" > /dev/null \
      || { apt-get update > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" > /dev/null; }
  else
    echo "missing: $why; install Debian's (or your distribution's) $*" >&2
    exit 1
  fi
}
