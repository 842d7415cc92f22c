#!/usr/bin/env bash
# Accounts, end to end on the Debian rootfs fixture (its /etc/shadow and /etc/gshadow
# 0640 root:shadow, as Debian ships them): a Dockerfile's groupadd, useradd -m, useradd
# -r, COPY --chown=NAME:GROUP and USER NAME migrate with nothing left by hand, the spec
# builds, and runc runs the image as the user (its ids, groups, home and files as
# useradd and Docker give them). The same commands as `render dockerfile` writes them,
# run by Debian's own groupadd and useradd in a chroot of the same rootfs, give the same
# /etc/passwd, /etc/group and /etc/gshadow bytes, the same /etc/shadow but for the date
# of the last change (which paddle-image leaves empty), and the same home tree. Clashes
# with the base's entries are refused naming both; the same inputs give the same digest
# from another cache; on scratch the databases hold the layer's entries alone.
source "$(dirname "$0")/../support/common.sh"
source "$SUPPORT/container.sh"
cd "$WORK"

# The Debian fixture's base, with the account databases as Debian ships them (the
# rootfs layer copies them 0644 root).
cat >base.yaml <<YAML
base: scratch
layers:
  - name: rootfs
    files:
      - {from: $BASE_ROOTFS, to: /, allow_absolute_symlinks: true, allow_outside: true}
  - name: shadow
    files:
      - {from: $BASE_ROOTFS/etc/shadow, to: /etc/shadow, mode: "0640", owner: "0:42", allow_outside: true}
      - {from: $BASE_ROOTFS/etc/gshadow, to: /etc/gshadow, mode: "0640", owner: "0:42", allow_outside: true}
config:
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
  cmd: [/bin/sh]
YAML
check "base image builds from the rootfs" "$PI" build base.yaml -q -o oci:base:bookworm

# --- a Dockerfile's accounts migrate and run ----------------------------------------
mkdir -p proj/app
printf 'import os\nprint("main.py runs as", os.getuid(), os.getgid())\n' >proj/app/main.py
cat >proj/Dockerfile <<'EOF'
FROM debian:bookworm
RUN groupadd -g 2000 ml && useradd -ms /bin/bash -u 1000 -G ml,video -c "Paddle user" paddle
RUN useradd -r -M svc
COPY --chown=paddle:ml app /home/paddle/app
USER paddle
WORKDIR /home/paddle/app
CMD ["python3", "main.py"]
EOF
check "init maps the Dockerfile" bash -c "'$PI' init --from-dockerfile proj/Dockerfile proj >init.log 2>&1"
check "every instruction is mapped" grep -q "0 instruction(s) not mapped" init.log
check "the spec has the accounts layer and USER's name" bash -c \
  "grep -q '    accounts:' proj/spec.yaml && grep -q '  user: \"paddle\"' proj/spec.yaml && grep -q 'owner: \"1000:2000\"' proj/spec.yaml"
sed -i "s|^base: .*|base: \"oci:$WORK/base:bookworm\"|" proj/spec.yaml
check "the migrated spec builds" "$PI" build proj/spec.yaml -q -o oci:img:t
rm -rf bundle && umoci unpack --image img:t bundle >/dev/null
RUN_TIMEOUT=120 run_in_bundle bundle sh -c \
  'id; id svc; stat -c "%U:%G %a %n" /home/paddle /home/paddle/app/main.py; ls -A /home/paddle; cd /home/paddle/app && python3 main.py' \
  >run.txt 2>&1 || true
check "runc runs the image as paddle with its groups" grep -qx \
  "uid=1000(paddle) gid=1000(paddle) groups=1000(paddle),44(video),2000(ml)" run.txt
check "the system user has a system uid and its own group" grep -qx "uid=999(svc) gid=999(svc) groups=999(svc)" run.txt
check "the home is the user's, 0755; COPY --chown's files paddle:ml" bash -c \
  "grep -qx 'paddle:paddle 755 /home/paddle' run.txt && grep -qx 'paddle:ml 644 /home/paddle/app/main.py' run.txt"
check "useradd -m's skeleton is in the home" bash -c "grep -qx .bashrc run.txt && grep -qx .profile run.txt"
check "the program runs as the user" grep -qx "main.py runs as 1000 1000" run.txt
check "the databases keep the base's mode and owner" bash -c \
  "[[ \$(stat -c %a:%u:%g bundle/rootfs/etc/shadow) == 640:0:42 && \$(stat -c %a:%u:%g bundle/rootfs/etc/passwd) == 644:0:0 ]]"
check "the base's users come first, byte for byte" bash -c \
  "for f in passwd shadow; do n=\$(wc -c <$BASE_ROOTFS/etc/\$f); cmp -n \$n $BASE_ROOTFS/etc/\$f bundle/rootfs/etc/\$f || exit 1; done"

# --- the same, by Debian's groupadd and useradd in a chroot of the rootfs -------------
sed "s|^base: .*|base: debian:bookworm|" proj/spec.yaml >proj/render.yaml
check "render dockerfile writes the accounts as one RUN" bash -c \
  "'$PI' render dockerfile proj/render.yaml >Dockerfile.rendered && grep -q '^RUN groupadd -g 2000 ml && ' Dockerfile.rendered"
cp -a "$BASE_ROOTFS" chroot
[[ -e chroot/dev/null ]] || mknod -m 666 chroot/dev/null c 1 3
check "the rendered RUN runs in the chroot" bash -c \
  "chroot chroot env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c \"\$(sed -n 's/^RUN //p' Dockerfile.rendered)\""
check "passwd, group and gshadow are useradd's bytes" bash -c \
  "for f in passwd group gshadow; do cmp chroot/etc/\$f bundle/rootfs/etc/\$f || exit 1; done"
check "shadow is useradd's but for the last change's date" bash -c \
  "diff <(awk -F: -v OFS=: '{\$3=\"\"; print}' chroot/etc/shadow) <(awk -F: -v OFS=: '{\$3=\"\"; print}' bundle/rootfs/etc/shadow)"
# The home as useradd leaves it (without the files layer's app/ the chroot lacks).
tree() { (cd "$1" && find home -path home/paddle/app -prune -o -printf '%P %y %m %u:%g %s\n' | sort); }
check "the home tree is useradd's (names, modes, owners, sizes)" diff <(tree chroot) <(tree bundle/rootfs)

# --- the same inputs, the same layer -------------------------------------------------
check "a build from another cache gives the same digest" bash -c \
  "'$PI' build proj/spec.yaml -q -o oci:img2:t --cache-dir other-cache && \
   [[ \$(manifest_digest img t) == \$(manifest_digest img2 t) ]]"

# --- clashes with the base -------------------------------------------------------------
clash() { # NAME ACCOUNTS-YAML
  mkdir -p "clash-$1"
  printf 'base: "oci:%s/base:bookworm"\nlayers:\n  - name: users\n    accounts:\n%s\n' "$WORK" "$2" >"clash-$1/spec.yaml"
}
clash name '      users: [{name: www-data, uid: 1000}]'
expect_fail "a base user's name with another uid names both" 3 \
  "spec.yaml:5:15: layer 'users': user 'www-data' has uid 1000, but the base's /etc/passwd line [0-9]+ \('www-data:x:33:" \
  "$PI" build clash-name/spec.yaml -o oci:clash
clash uid '      users: [{name: admin, uid: 0}]'
expect_fail "a base user's uid with another name names both" 3 "uid 0 of user 'admin' is the base's user 'root'" \
  "$PI" build clash-uid/spec.yaml -o oci:clash
clash gid '      groups: [{name: gpu, gid: 44}]'
expect_fail "a base group's gid with another name names both" 3 "gid 44 of group 'gpu' is the base's group 'video'" \
  "$PI" build clash-gid/spec.yaml -o oci:clash
clash nogroup '      users: [{name: paddle, uid: 1000, gid: 4242}]'
expect_fail "a gid no group has" 3 "gid 4242, which no group has" "$PI" build clash-nogroup/spec.yaml -o oci:clash
clash supp '      users: [{name: paddle, uid: 1000, groups: [gpus]}]'
expect_fail "a supplementary group that does not exist" 3 "joins group 'gpus', which neither the base's /etc/group" \
  "$PI" build clash-supp/spec.yaml -o oci:clash
check "nothing was written for a refused build" bash -c "[[ ! -e clash ]]"

# --- on scratch: the layer's entries alone ----------------------------------------------
mkdir -p scratch
printf 'base: scratch\nlayers:\n  - name: users\n    accounts:\n      users: [{name: app, uid: 10001}]\n' >scratch/spec.yaml
check "an accounts layer builds on scratch" "$PI" build scratch/spec.yaml -q -o oci:scratch-img:t
rm -rf sb && umoci unpack --image scratch-img:t sb >/dev/null
check "scratch: passwd and group hold the user alone, no shadow, the home the user's" bash -c "
  [[ \$(cat sb/rootfs/etc/passwd) == 'app:x:10001:10001::/home/app:/bin/sh' && \$(cat sb/rootfs/etc/group) == 'app:x:10001:' ]] &&
  [[ ! -e sb/rootfs/etc/shadow && \$(stat -c %u:%g:%a sb/rootfs/home/app) == 10001:10001:755 ]]"

finish
