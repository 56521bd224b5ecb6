#!/usr/bin/env bash
# Provide a target glibc (Debian's libc6, plus libgcc-s1 and zlib1g that vendored
# Fortran runtimes need) to run cross-built test programs under qemu-user with
# `-L <sysroot>`. Prints the sysroot path on stdout.
#
# Usage: target-libc.sh aarch64|ppc64le|armhf|s390x
#
# The host's dpkg is never touched: apt runs under a private APT_CONFIG with its own
# state, cache and source list (the mirror URIs are taken from the host's apt sources),
# and the package is unpacked with dpkg-deb -x. Results are cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/crosswheel/sysroots/<arch>.
set -euo pipefail

die() { echo "target-libc.sh: $*" >&2; exit 1; }

arch="${1:-}"
case "$arch" in
    aarch64) debian_arch=arm64; loader=lib/ld-linux-aarch64.so.1 ;;
    ppc64le) debian_arch=ppc64el; loader=lib64/ld64.so.2 ;;
    armhf) debian_arch=armhf; loader=lib/ld-linux-armhf.so.3 ;;
    s390x) debian_arch=s390x; loader=lib/ld64.so.1 ;;
    *) die "usage: target-libc.sh aarch64|ppc64le|armhf|s390x" ;;
esac

cache="${XDG_CACHE_HOME:-$HOME/.cache}/crosswheel"
sysroot="$cache/sysroots/$arch"
packages="libc6 libgcc-s1 zlib1g"
complete() { [ -e "$sysroot/$loader" ] && [ "$(cat "$sysroot/.complete" 2>/dev/null)" = "$packages" ]; }
if complete; then
    echo "$sysroot"
    exit 0
fi
# Tests run in parallel and several may ask for the same sysroot on a fresh cache: one
# provides it while the others wait, then find it complete.
mkdir -p "$cache/sysroots"
exec 9>"$cache/sysroots/.$arch.lock"
flock 9
if complete; then
    echo "$sysroot"
    exit 0
fi

for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || die "'$tool' is missing: run on a Debian/Ubuntu host (apt-get install apt dpkg)"
done

# The first deb822 (or one-line) source of the host: its URI, release suite and keyring.
uri="" suite="" keyring=""
for file in /etc/apt/sources.list.d/*.sources; do
    [ -e "$file" ] || continue
    uri=$(awk '/^URIs:/ {print $2; exit}' "$file")
    suite=$(awk '/^Suites:/ {print $2; exit}' "$file")
    keyring=$(awk '/^Signed-By:/ {print $2; exit}' "$file")
    [ -n "$uri" ] && break
done
if [ -z "$uri" ] && [ -e /etc/apt/sources.list ]; then
    read -r uri suite < <(awk '$1 == "deb" && $2 !~ /^\[/ {print $2, $3; exit}' /etc/apt/sources.list) || true
fi
[ -n "$uri" ] && [ -n "$suite" ] || die "no Debian/Ubuntu apt source found in /etc/apt to download libc6:$debian_arch from"

work=$(mktemp -d "${TMPDIR:-/tmp}/crosswheel-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/debs"
: > "$work/status"
signed_by=""
[ -n "$keyring" ] && signed_by=" signed-by=$keyring"
echo "deb [arch=$debian_arch$signed_by] $uri $suite main" > "$work/sources.list"
cat > "$work/apt.conf" <<CONF
Dir::State "$work/state";
Dir::State::status "$work/status";
Dir::Cache "$work/cache";
Dir::Etc::SourceList "$work/sources.list";
Dir::Etc::SourceParts "$work/parts";
Dir::Etc::Preferences "$work/parts/none";
Dir::Etc::PreferencesParts "$work/parts";
APT::Architecture "$debian_arch";
APT::Architectures { "$debian_arch"; };
APT::Sandbox::User "$(id -un)";
CONF
export APT_CONFIG="$work/apt.conf"

apt-get -qq update >&2 || die "apt-get update failed for $uri $suite ($debian_arch)"
for package in $packages; do
    (cd "$work/debs" && apt-get -qq download "$package:$debian_arch" >&2) \
        || die "apt-get download $package:$debian_arch failed"
done

rm -rf "$sysroot"
mkdir -p "$sysroot"
for deb in "$work"/debs/*.deb; do
    dpkg-deb -x "$deb" "$sysroot"
done

# Absolute symlinks would point into the host's root under qemu -L: make them relative.
while IFS= read -r link; do
    target=$(readlink "$link")
    case "$target" in
        /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot$target")" "$link" ;;
    esac
done < <(find "$sysroot" -type l)

[ -e "$sysroot/$loader" ] || die "$packages ($debian_arch) unpacked but $loader is missing in $sysroot"
echo "$packages" > "$sysroot/.complete"
echo "$sysroot"
