#!/bin/sh
# Prints the reference of the Debian bookworm base image that images/cline (and anything else
# built on the same base) starts FROM, building it first when needed. Logs go to stderr; stdout
# is only the reference, so a Makefile can do: base=$(images/base.sh auto).
#
# Usage: images/base.sh auto|registry|debootstrap
#
#   registry     debian:bookworm-slim from a registry (docker build pulls it).
#   debootstrap  the same Debian release made from Debian packages with
#                `debootstrap --variant=minbase --include=<packages>` from the apt mirror this machine
#                already uses, stripped like the slim image (no docs, man pages, locales, apt lists),
#                and imported with `docker import` as cline-mcp/debian-base:bookworm-<arch>-<hash>.
#                Needs root, debootstrap and the Debian archive keyring; no registry. The hash
#                covers this script, so a change rebuilds it; an existing image is reused.
#   auto         registry when debian:bookworm-slim is present or can be pulled, else debootstrap.
#
# Environment: DEBIAN_MIRROR (default: the first bookworm mirror in the apt sources, else
# http://deb.debian.org/debian), BASE_PACKAGES (comma-separated; default below: what the Cline CLI
# runs at run time), ENGINE_ARCH (default: the engine's architecture).
set -eu

mode="${1:-auto}"
suite=bookworm
slim="debian:${suite}-slim"
# What the CLI uses at run time: /bin/bash for run_commands, /bin/sh + cat/head/hostname for its
# machine id, git for checkpoints and the repository context, CA certificates for HTTPS.
packages="${BASE_PACKAGES:-bash,coreutils,hostname,git,ca-certificates}"
log() { printf 'images/base.sh: %s\n' "$*" >&2; }

arch="${ENGINE_ARCH:-$(docker version --format '{{.Server.Arch}}' 2>/dev/null || echo unknown)}"

registry_base() {
	if docker image inspect "$slim" >/dev/null 2>&1; then
		return 0
	fi
	log "pulling $slim"
	docker pull -q "$slim" >&2 2>/dev/null
}

# mirror finds the Debian archive this machine's apt already uses for $suite.
mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then
		echo "$DEBIAN_MIRROR"
		return
	fi
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list; do
		[ -r "$f" ] || continue
		# deb822: a stanza with URIs: and Suites: containing the suite; one-line: deb URI suite ...
		m=$(awk -v s="$suite" '
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s && uri !~ /security/) { print uri; exit } }
			/^deb[ \t]/ { u = $2; if ($2 ~ /^\[/) { for (i = 2; i <= NF; i++) if ($i ~ /\]$/) { u = $(i+1); x = $(i+2); break } } else { x = $3 }
			              if (x == s && u !~ /security/) { print u; exit } }
		' "$f" 2>/dev/null || true)
		if [ -n "$m" ]; then
			echo "$m"
			return
		fi
	done
	echo http://deb.debian.org/debian
}

debootstrap_base() {
	hash=$( (cat "$0"; echo "$packages") | sha256sum | cut -c1-12)
	ref="cline-mcp/debian-base:${suite}-${arch}-${hash}"
	if docker image inspect "$ref" >/dev/null 2>&1; then
		log "reusing $ref"
		echo "$ref"
		return
	fi
	command -v debootstrap >/dev/null 2>&1 || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }
	[ "$(id -u)" = 0 ] || { log "debootstrap needs root (or use a registry: images/base.sh registry)"; exit 1; }
	host_arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
	if [ "$host_arch" != "$arch" ]; then
		log "debootstrap builds for this machine ($host_arch) but the engine runs $arch; use a registry"
		exit 1
	fi
	url=$(mirror)
	work=$(mktemp -d "${TMPDIR:-/tmp}/cline-mcp-debootstrap.XXXXXX")
	trap 'rm -rf "$work"' EXIT INT TERM
	log "debootstrap --variant=minbase --include=$packages $suite from $url (about a minute)"
	start=$(date +%s)
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$url" >"$work/log" 2>&1; then
		tail -20 "$work/log" >&2
		exit 1
	fi
	r="$work/rootfs"
	# Strip it like debian:bookworm-slim (debuerreotype's slimify), and keep later installs slim.
	mkdir -p "$r/etc/dpkg/dpkg.cfg.d"
	cat >"$r/etc/dpkg/dpkg.cfg.d/docker" <<-'EOF'
	path-exclude /usr/share/doc/*
	path-include /usr/share/doc/*/copyright
	path-exclude /usr/share/man/*
	path-exclude /usr/share/groff/*
	path-exclude /usr/share/info/*
	path-exclude /usr/share/lintian/*
	path-exclude /usr/share/linda/*
	path-exclude /usr/share/locale/*
	path-include /usr/share/locale/locale.alias
	EOF
	find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
	find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
	rm -rf "$r/usr/share/man/"* "$r/usr/share/groff/"* "$r/usr/share/info/"* "$r/usr/share/lintian/"* "$r/usr/share/linda/"*
	find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
	rm -rf "$r/var/cache/apt/"*.bin "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"* "$r/var/log/"*.log "$r/var/log/apt/"* \
		"$r/tmp/"* "$r/root/"* "$r/dev/"* "$r/proc/"* "$r/sys/"* "$r/run/"*
	printf 'deb %s %s main\n' "$url" "$suite" >"$r/etc/apt/sources.list"
	# A machine id is per container; an empty file is what the official images ship.
	: >"$r/etc/machine-id"
	tar --numeric-owner -C "$r" -c . | docker import \
		--change 'CMD ["bash"]' \
		--change "LABEL io.cline-mcp.base=debootstrap io.cline-mcp.base.packages=$packages" \
		- "$ref" >/dev/null
	log "imported $ref in $(($(date +%s) - start)) s ($(docker image inspect --format '{{.Size}}' "$ref" | awk '{printf "%.0f MB", $1/1e6}'))"
	echo "$ref"
}

case "$mode" in
registry)
	echo "$slim"
	;;
debootstrap)
	debootstrap_base
	;;
auto)
	if registry_base; then
		echo "$slim"
	else
		log "no registry: building the base from Debian packages"
		debootstrap_base
	fi
	;;
*)
	log "usage: $0 auto|registry|debootstrap"
	exit 2
	;;
esac
