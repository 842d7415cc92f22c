#!/bin/sh
# install.sh: installs this unpacked paddle-image release under a prefix, so that the
# command, its man pages and its shell completions are where PATH, man and the shells
# look:
#   PREFIX/lib/paddle-image/                    this tree (bin/, libexec/, lib/, share/)
#   PREFIX/bin/paddle-image                     a link to lib/paddle-image/bin/paddle-image
#   PREFIX/share/man/man1/paddle-image*.1       a page per command
#   PREFIX/share/bash-completion/completions/paddle-image
#   PREFIX/share/zsh/site-functions/_paddle-image
#   PREFIX/share/fish/vendor_completions.d/paddle-image.fish
# Every file, link and directory it makes is listed in
# PREFIX/lib/paddle-image/install-manifest; PREFIX/lib/paddle-image/uninstall.sh (or
# install.sh --uninstall with the same prefix) removes exactly those, and nothing else.
# Installing again over an earlier install.sh install replaces it; it refuses to
# replace any other file.
#
#   ./install.sh [--prefix DIR] [--uninstall]
#
# PREFIX defaults to /usr/local (or the PREFIX environment variable); DESTDIR, as
# usual, is put in front of every path (for staging a package), and the manifest holds
# paths relative to the prefix, so uninstall.sh works where the tree ends up.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-/usr/local}
uninstall=0
while [ $# -gt 0 ]; do
  case $1 in
  --prefix)
    [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }
    prefix=$2
    shift 2
    ;;
  --prefix=*) prefix=${1#--prefix=}; shift ;;
  --uninstall) uninstall=1; shift ;;
  -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $prefix in
/*) ;;
*) prefix=$(pwd)/$prefix ;;
esac
prefix=${prefix%/}
root=${DESTDIR:-}$prefix
lib=$root/lib/paddle-image

if [ "$uninstall" -eq 1 ]; then
  if [ ! -f "$lib/install-manifest" ]; then
    echo "install.sh: nothing installed by install.sh under $root (no $lib/install-manifest)" >&2
    exit 1
  fi
  exec sh "$lib/uninstall.sh"
fi
if [ ! -x "$here/bin/paddle-image" ] || [ ! -d "$here/share/man/man1" ]; then
  echo "install.sh: run the install.sh of an unpacked paddle-image archive (no bin/paddle-image next to it)" >&2
  exit 1
fi
case $here/ in
"$lib"/*)
  echo "install.sh: this tree is already installed at $lib" >&2
  exit 1
  ;;
esac

# quote_for SHELL STRING: prints STRING as one single-quoted word for SHELL's command
# line, nothing in it expanded. sh (bash and zsh alike): each ' becomes '\''. fish: \ and
# ' get a backslash (the only escapes inside fish's single quotes).
quote_for() {
  q_rest=$2 q_out=
  while [ -n "$q_rest" ]; do
    q_c=${q_rest%"${q_rest#?}"}
    q_rest=${q_rest#?}
    case $1:$q_c in
    sh:\') q_out="$q_out'\\''" ;;
    fish:\' | fish:\\) q_out="$q_out\\$q_c" ;;
    *) q_out=$q_out$q_c ;;
    esac
  done
  printf "'%s'" "$q_out"
}

# What goes outside lib/paddle-image: "target source" pairs, relative to the prefix and
# to this tree. The command is a link (bin/paddle-image finds libexec/ and lib/ through
# it); the rest are copies.
outside() {
  for page in "$here"/share/man/man1/*.1; do
    echo "share/man/man1/$(basename "$page") share/man/man1/$(basename "$page")"
  done
  echo "share/bash-completion/completions/paddle-image share/bash-completion/completions/paddle-image"
  echo "share/zsh/site-functions/_paddle-image share/zsh/vendor-completions/_paddle-image"
  echo "share/fish/vendor_completions.d/paddle-image.fish share/fish/vendor_completions.d/paddle-image.fish"
}

# An earlier install.sh install goes first; any other file in the way stops here,
# before anything is written.
if [ -f "$lib/install-manifest" ]; then
  echo "install.sh: replacing the paddle-image installed under $root"
  sh "$lib/uninstall.sh" >/dev/null
elif [ -e "$lib" ] || [ -L "$lib" ]; then
  echo "install.sh: $lib exists and was not made by install.sh; remove it or choose another --prefix" >&2
  exit 1
fi
for target in bin/paddle-image $(outside | cut -d' ' -f1); do
  if [ -e "$root/$target" ] || [ -L "$root/$target" ]; then
    echo "install.sh: $root/$target exists and was not installed by install.sh; remove it or choose another --prefix" >&2
    exit 1
  fi
done

# The manifest is written as things are made: an interrupted install can be undone too.
# Only the prefix itself and what is below it count as made (not DESTDIR's parents).
made=
# make_dir REL: creates PREFIX/REL and its missing parents, recording each one made.
make_dir() {
  [ -d "$root/$1" ] && return 0
  case $1 in
  */*) make_dir "${1%/*}" ;;
  .) mkdir -p "$root"; made="$made
d ."; return 0 ;;
  *) make_dir . ;;
  esac
  mkdir "$root/$1"
  made="$made
d $1"
}
make_dir lib/paddle-image
manifest=$lib/install-manifest
printf '%s\n' "# made by install.sh: every path relative to the prefix; uninstall.sh removes them" >"$manifest"
printf '%s\n' "$made" | sed '/^$/d' >>"$manifest"
echo "f lib/paddle-image/install-manifest" >>"$manifest"
# record KIND REL: one line of the manifest, as soon as the thing exists.
record() { echo "$1 $2" >>"$manifest"; }
track_dir() {
  made=
  make_dir "$1"
  printf '%s\n' "$made" | sed '/^$/d' >>"$manifest"
}

# This tree, under lib/paddle-image (install.sh itself stays out).
(cd "$here" && find bin libexec lib share -type d) | while IFS= read -r d; do
  track_dir "lib/paddle-image/$d"
done
(cd "$here" && find bin libexec lib share ! -type d) | while IFS= read -r f; do
  cp -P "$here/$f" "$lib/$f"
  record f "lib/paddle-image/$f"
done
# uninstall.sh: reads the manifest beside it, finds the prefix from where it is.
cat >"$lib/uninstall.sh" <<'EOF'
#!/bin/sh
# Removes what install.sh installed: each file and link listed in install-manifest
# (beside this script), then each directory it made, if empty. Nothing else.
set -eu
lib=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$lib/../.." && pwd)
manifest=$lib/install-manifest
[ -f "$manifest" ] || { echo "uninstall.sh: no $manifest" >&2; exit 1; }
dirs=$(sed -n 's/^d //p' "$manifest" | sed -n '1!G;h;$p')
sed -n 's/^[fl] //p' "$manifest" | while IFS= read -r f; do
  if [ -f "$root/$f" ] || [ -L "$root/$f" ]; then
    rm -f "$root/$f"
  fi
done
printf '%s\n' "$dirs" | while IFS= read -r d; do
  case $d in
  '') ;;
  .) rmdir "$root" 2>/dev/null || true ;;
  *) rmdir "$root/$d" 2>/dev/null || true ;;
  esac
done
echo "uninstall.sh: removed paddle-image from $root"
EOF
chmod 0755 "$lib/uninstall.sh"
record f lib/paddle-image/uninstall.sh

track_dir bin
ln -s ../lib/paddle-image/bin/paddle-image "$root/bin/paddle-image"
record l bin/paddle-image
outside | while read -r target source; do
  track_dir "${target%/*}"
  cp "$here/$source" "$root/$target"
  chmod 0644 "$root/$target"
  record f "$target"
done

# The lines below are for pasting into a shell, so the prefix goes in quoted for that
# shell (whatever it holds: spaces, $(...), quotes), and out through printf (dash's echo
# would eat its backslashes).
printf '%s\n' "install.sh: installed paddle-image under $root (uninstall: $(quote_for sh "$prefix/lib/paddle-image/uninstall.sh"))"
case :$PATH: in
*:"$prefix/bin":*) ;;
*) printf '%s\n' "  PATH: add $prefix/bin:" "    export PATH=$(quote_for sh "$prefix/bin"):\"\$PATH\"" ;;
esac
case $prefix in
/usr | /usr/local) ;;
*)
  printf '%s\n' \
    "  man: man-db finds $prefix/share/man once $prefix/bin is in PATH; else:" \
    "    export MANPATH=$(quote_for sh "$prefix/share/man:")" \
    "  bash: bash-completion loads its completion once $prefix/bin is in PATH; without bash-completion, add to ~/.bashrc:" \
    "    source $(quote_for sh "$prefix/share/bash-completion/completions/paddle-image")" \
    "  zsh: before compinit:" \
    "    fpath=($(quote_for sh "$prefix/share/zsh/site-functions") \$fpath)" \
    "  fish:" \
    "    set -p fish_complete_path $(quote_for fish "$prefix/share/fish/vendor_completions.d")"
  ;;
esac
