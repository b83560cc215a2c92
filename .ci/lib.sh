# Shared by the CI scripts (`source .ci/lib.sh` after defining `say` and `die`).

# Installs Debian's package `$1` with apt-get (as root, or through sudo); `$2` names what is
# missing and `$3` what else to do, for the error when it cannot.
apt_install() {
  command -v apt-get >/dev/null || die "no $2, and no apt-get to install it; $3"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "no $2; installing it needs root (or sudo), or $3"
    sudo="sudo"
  fi
  say "installing $1 with apt-get"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$1" >&2
}

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
