# Sourced by `make test` (POSIX sh): the system tools some tests run, from Debian's packages,
# installed when missing and running as root (as tests/postgres_env.sh installs PostgreSQL),
# so that `make test` on a fresh machine needs nothing installed by hand. Not root: nothing is
# installed, and each test needing a missing tool fails naming its package.
#   prometheus: promtool and the prometheus binary (tests/deploy)
#   Go, protoc, its Go plugins and the Go libraries as sources in /usr/share/gocode, for the
#   Go client (tests/clients/test_go_client.py; built offline: no Go module proxy). The 1.5
#   series of github.com/golang/protobuf is named: apt's default, 1.3, breaks grpc-go's codec.
cardgames_packages=""
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  cardgames_packages="prometheus"
fi
if ! command -v go >/dev/null 2>&1 || ! command -v protoc-gen-go-grpc >/dev/null 2>&1; then
  cardgames_packages="$cardgames_packages golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev"
  cardgames_packages="$cardgames_packages golang-google-genproto-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev"
fi
if [ -n "$cardgames_packages" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages the tests use: $cardgames_packages" >&2
    apt-get update -qq
    # shellcheck disable=SC2086  # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $cardgames_packages >/dev/null
  else
    echo "some tests need Debian packages not installed here (run make test as root to have them" \
         "installed): $cardgames_packages" >&2
  fi
fi
unset cardgames_packages
