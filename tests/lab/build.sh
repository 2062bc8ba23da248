#!/usr/bin/env bash
# Build kube-apiserver and kube-controller-manager from Debian's `kubernetes` source package
# and cache them outside the checkout. Safe to re-run: a cached build is reused.
#
#   tests/lab/build.sh            # prints the directory holding the two binaries
#
# Environment:
#   FLEET_LAB_CACHE   cache root (default: ~/.cache/multicluster-fleet-lab)
set -euo pipefail

cache_root="${FLEET_LAB_CACHE:-$HOME/.cache/multicluster-fleet-lab}"
log() { printf '[lab-build] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# One build at a time per cache: a build starts by removing its work tree, so a second run (two checkouts set up at
# once) would delete the first one's tree under it. The second run waits, then finds the first one's binaries.
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
if ! flock -n 9; then
  log "another build holds $cache_root/.lock: waiting for it"
  flock 9
fi

ensure_packages() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_deb_src() {
  local src=/etc/apt/sources.list.d/debian-src.sources
  [ -f "$src" ] && return 0
  log "adding deb-src entries mirroring debian.sources"
  sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | as_root tee "$src" >/dev/null
  as_root apt-get update -qq
}

ensure_packages etcd-server golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev

# The source version keys the cache, so a new Debian upload rebuilds.
ensure_deb_src
version=$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/ {print $2; exit}')
[ -n "$version" ] || { log "cannot find the kubernetes source package (deb-src missing?)"; exit 1; }
out="$cache_root/$version/bin"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ]; then
  echo "$out"
  exit 0
fi

work="$cache_root/$version/src"
rm -rf "$work" && mkdir -p "$work"
log "fetching kubernetes $version source"
(cd "$work" && apt-get source -qq --download-only kubernetes >/dev/null && dpkg-source -x ./*.dsc tree >/dev/null)
tree="$work/tree"

# Kubernetes 1.20 vendors reflect2 1.0.1, which faults under Go >= 1.18 (runtime.mapiternext).
log "replacing vendored modern-go/reflect2 with Debian's fixed copy"
rsync -a --delete --exclude go.mod /usr/share/gocode/src/github.com/modern-go/reflect2/ "$tree/vendor/github.com/modern-go/reflect2/"

mkdir -p "$tree/.go/src/k8s.io"
ln -sfn "$tree" "$tree/.go/src/k8s.io/kubernetes"
log "building kube-apiserver and kube-controller-manager (several minutes)"
(
  cd "$tree/.go/src/k8s.io/kubernetes"
  export GOPATH="$tree/.go" CGO_ENABLED=0 GOFLAGS=-mod=vendor GO111MODULE=on
  # Debian versions read like 1.20.5+really1.20.2-1.1: the tree is the part after "really".
  upstream="${version#*:}"; upstream="${upstream##*really}"; upstream="${upstream%%[+~-]*}"
  export KUBE_GIT_VERSION="v$upstream" KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT=debian
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >&2
)
mkdir -p "$out"
cp "$tree/_output/bin/kube-apiserver" "$tree/_output/bin/kube-controller-manager" "$out/"
rm -rf "$work"
log "cached in $out"
echo "$out"
