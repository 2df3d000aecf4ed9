#!/bin/sh
# Generates the Go stubs from proto/cardgames/v1 as docs/api.md says ("Generating stubs in
# another language") into clients/go/gen, then builds this example client into
# clients/go/build/cardgames-go in GOPATH mode, offline, against the Go libraries that Debian
# installs in /usr/share/gocode (README.md here lists the packages). `build.sh test` also runs
# its unit tests (go test).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

PKG="example.com/cardgames/gen/cardgames/v1;cardgamesv1"
M=""
for f in cards match card_games admin; do M="$M,Mcardgames/v1/$f.proto=$PKG"; done
rm -rf "$here/gen"
mkdir -p "$here/gen"
cd "$root"
protoc -I proto --go_out="$here/gen" --go_opt="paths=source_relative$M" \
    --go-grpc_out="$here/gen" --go-grpc_opt="paths=source_relative$M" proto/cardgames/v1/*.proto

# A GOPATH workspace in which this folder is the package example.com/cardgames, the stubs'
# import path (PKG above), followed by Debian's.
workspace="$here/build/gopath"
mkdir -p "$workspace/src/example.com"
ln -sfn "$here" "$workspace/src/example.com/cardgames"
export GO111MODULE=off GOPATH="$workspace:${DEBIAN_GOCODE:-/usr/share/gocode}"
go vet example.com/cardgames
if [ "${1:-}" = test ]; then
    go test example.com/cardgames
fi
go build -o "$here/build/cardgames-go" example.com/cardgames
