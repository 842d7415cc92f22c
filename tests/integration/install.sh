#!/usr/bin/env bash
# `cmake --install` puts the binary, a man page per command, bash/zsh/fish completions
# and the docs under the prefix; the man pages and completions are generated from the
# command line definition, so they list exactly what --help lists; each shell really
# completes with the installed file.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
BUILD=$(dirname "$(dirname "$PI")")
P=$WORK/prefix
rm -rf "$P"
check "cmake --install into a prefix" cmake --install "$BUILD" --prefix "$P"
check "the binary, man pages, completions and docs are in the usual places" bash -c "
  test -x '$P/bin/paddle-image' && test -f '$P/share/man/man1/paddle-image.1' &&
  test -f '$P/share/man/man1/paddle-image-build.1' && test -f '$P/share/man/man1/paddle-image-cache-prune.1' &&
  test -f '$P/share/bash-completion/completions/paddle-image' && test -f '$P/share/zsh/vendor-completions/_paddle-image' &&
  test -f '$P/share/fish/vendor_completions.d/paddle-image.fish' &&
  test -f '$P/share/doc/paddle-image/README.md' && test -f '$P/share/doc/paddle-image/spec.md' &&
  test -f '$P/share/doc/paddle-image/COPYRIGHT'"
check "the installed binary runs" "$P/bin/paddle-image" version

# Man pages: one per command, nested ones too; each renders without a groff warning and
# lists exactly the long options --help lists.
pages=0; bad=""
while read -r cmd; do
  page="$P/share/man/man1/paddle-image${cmd:+-${cmd// /-}}.1"
  pages=$((pages + 1))
  [[ -f $page ]] || { bad+=" missing:$page"; continue; }
  warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || true
  [[ -z $warn ]] || bad+=" groff($page):$warn"
  # shellcheck disable=SC2086
  help_opts=$("$PI" $cmd --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
  man_opts=$(LC_ALL=C MANWIDTH=200 man -P cat -l "$page" 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
  missing=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
  [[ -z $missing ]] || bad+=" $page lacks: $missing"
done < <(/usr/bin/python3 - "$PI" <<'PY'
import subprocess, sys, re
# every command path, from the generated bash completion (the same walk of the CLI)
text = subprocess.run([sys.argv[1], "completion", "bash"], capture_output=True, text=True).stdout
for m in re.finditer(r"^_pi_subs\['\.([^']*)'\]=", text, re.M):
    print(m.group(1))
PY
)
check "a man page for each of the $pages commands, rendering cleanly, with every option --help lists" test -z "$bad"
[[ -z $bad ]] || echo "# $bad" | head -c 2000
check "man finds an installed page through MANPATH" bash -c \
  "LC_ALL=C MANPATH='$P/share/man' man -P cat paddle-image-build 2>/dev/null | grep -q -- '--cache-dir'"

# Completions, with the installed files, in each shell.
check "bash completes commands, subcommands, options and option values" bash -c '
  source "$1"
  t() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _paddle_image; echo "${COMPREPLY[*]}"; }
  [[ $(t paddle-image bu) == build ]] && [[ " $(t paddle-image cache "") " == *" prune "* ]] &&
  [[ $(t paddle-image build --cache-d) == --cache-dir ]] && [[ $(t paddle-image warm pu) == push ]] &&
  mkdir -p compl-dir && [[ $(t paddle-image build --cache-dir compl-d) == compl-dir ]]' _ "$P/share/bash-completion/completions/paddle-image"
check "fish completes commands and options with their descriptions" bash -c "
  fish -c 'source $P/share/fish/vendor_completions.d/paddle-image.fish; complete -C \"paddle-image bu\"; complete -C \"paddle-image cache \"; complete -C \"paddle-image build --cache-d\"' >fish.out 2>&1 &&
  grep -q '^build' fish.out && grep -q '^prune' fish.out && grep -q '^--cache-dir' fish.out || { cat fish.out; exit 1; }"
check "zsh's completion function offers the subcommands and options (compadd recorded)" zsh -f -c "
  compadd() { print -r -- \"\$*\" >>zsh.out; }; _files() { print FILES >>zsh.out; }; compdef() {}
  source $P/share/zsh/vendor-completions/_paddle-image
  words=(paddle-image cache ''); CURRENT=3; PREFIX=''; _paddle-image
  words=(paddle-image build --cache); CURRENT=3; PREFIX=--cache; _paddle-image
  grep -q -- 'prune' zsh.out && grep -q -- '--cache-dir' zsh.out"
# The archive's install.sh (packaging/archive/install.sh), on an archive-like tree made of
# what cmake --install put in the prefix, under a prefix holding spaces, $(...), backticks,
# a quote and a backslash: the lines it prints for pasting work in their shells, with the
# prefix taken literally, and nothing in it runs.
A=$WORK/archive
ODD="$WORK/pre fix \$(touch pwned) \`touch pwned\` 'q\\z"
rm -rf "$A" && mkdir -p "$A/bin" "$A/libexec" "$A/lib" "$WORK/paste"
cp "$P/bin/paddle-image" "$A/bin/" && cp -r "$P/share" "$A/" && cp "$ROOT/packaging/archive/install.sh" "$A/"
check "the archive's install.sh installs under a prefix with spaces, \$(...), \`...\`, ' and \\" \
  env PATH=/usr/bin:/bin sh -c '"$1/install.sh" --prefix "$2" >"$3"' _ "$A" "$ODD" "$WORK/odd-install.txt"
hint() { sed -n "s/^    \\($1.*\\)/\\1/p" "$WORK/odd-install.txt"; }
check "... bash runs its PATH, MANPATH and source lines, taking the prefix literally" bash -c '
  cd "$1" && PATH=/usr/bin:/bin && eval "$2" && eval "$3" && eval "$4" &&
  [[ $PATH == "$5/bin:/usr/bin:/bin" && $MANPATH == "$5/share/man:" ]] && declare -F _paddle_image' \
  _ "$WORK/paste" "$(hint 'export PATH=')" "$(hint 'export MANPATH=')" "$(hint 'source ')" "$ODD"
check "... and sh its export lines" sh -c '
  cd "$1" && eval "$2" && [ "$MANPATH" = "$3/share/man:" ]' _ "$WORK/paste" "$(hint 'export MANPATH=')" "$ODD"
check "... zsh's fpath line puts the prefix's site-functions first in fpath" zsh -f -c '
  cd "$1" && eval "$2" && [[ $fpath[1] == "$3/share/zsh/site-functions" && -f $fpath[1]/_paddle-image ]] &&
  (( ${#fpath} > 1 ))' _ "$WORK/paste" "$(hint 'fpath=(')" "$ODD"
check "... fish's line puts the prefix's completions first in fish_complete_path, and fish completes from there" \
  fish -c 'cd $argv[1]; and eval $argv[2]; and test "$fish_complete_path[1]" = "$argv[3]/share/fish/vendor_completions.d"
  and test -f $fish_complete_path[1]/paddle-image.fish; and set -p PATH $argv[3]/bin # (fish loads completions of commands it finds)
  and complete -C "paddle-image bu" | string match -q -r "^build\t"' \
  "$WORK/paste" "$(hint 'set -p fish_complete_path ')" "$ODD"
check "... and nothing in the prefix ran (no file pwned anywhere)" bash -c \
  '[[ -z $(find "$1" -name pwned) ]] && [[ -d $2/lib/paddle-image ]]' _ "$WORK" "$ODD"
check "... its uninstall.sh, run by the line it printed, removes the prefix" bash -c '
  cd "$1" && line=$(sed -n "s/^install\.sh: installed .* (uninstall: \(.*\))\$/\1/p" "$2") && [[ -n $line ]] &&
  eval "$line" >/dev/null && [[ ! -e $3 ]] && [[ -z $(find "$1" -name pwned) ]]' _ "$WORK/paste" "$WORK/odd-install.txt" "$ODD"
finish
