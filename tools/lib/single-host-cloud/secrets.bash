# shellcheck shell=bash
#
# The cloud's passwords: random, one per account, made on the first `up`
# and kept 0600 in $CLOUD_STATE/secrets (0700), gone with `down`. This is
# a shared lab host: a password never appears in a command line (other
# users read every process's argv in /proc) nor in SQL text (MariaDB's
# logs and processlist): programs read it from a file, their standard
# input or their environment.

function secrets_dir {
    echo "$CLOUD_STATE/secrets"
}

# secret_file NAME - the file holding the password of account NAME,
# created with 32 random letters and digits when it does not exist.
function secret_file {
    local name=$1 dir file
    [[ $name =~ ^[a-z][a-z0-9_-]*$ ]] || cloud_die "bad secret name '$name'"
    dir=$(secrets_dir)
    file=$dir/$name
    if [[ ! -s $file ]]; then
        (
            umask 077
            mkdir -p "$dir"
            chmod 0700 "$dir"
            # Pipes, not arguments: the password is never on a command line.
            tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 32 > "$file.tmp"
            mv -f "$file.tmp" "$file"
        )
    fi
    echo "$file"
}

# secret NAME - the password itself, for bash variables and here-documents
# only (never as an argument of a program).
function secret {
    local file
    file=$(secret_file "$1")
    echo "$(< "$file")"
}

# mysql_password_hash NAME - MariaDB's mysql_native_password hash of a
# secret, so that SQL carries the hash and never the password.
function mysql_password_hash {
    python3 -c 'import hashlib, sys
with open(sys.argv[1], "rb") as stream:
    password = stream.read().strip()
print("*" + hashlib.sha1(hashlib.sha1(password).digest()).hexdigest().upper())
' "$(secret_file "$1")"
}

# ini_secret FILE SECTION KEY TEMPLATE - set KEY in SECTION of an ini file
# (as devstack's iniset does) to TEMPLATE with each {NAME} replaced by the
# secret NAME, read by Python from the secrets directory: the command line
# carries the template only. The file keeps its owner and mode.
function ini_secret {
    local name
    for name in $(grep -o '{[a-z][a-z0-9_-]*}' <<< "$4" | tr -d '{}'); do
        secret_file "$name" > /dev/null
    done
    python3 -c '
import os
import re
import sys

path, section, key, template, secrets = sys.argv[1:]


def secret(match):
    with open(os.path.join(secrets, match.group(1))) as stream:
        return stream.read().strip()


value = re.sub(r"{([a-z][a-z0-9_-]*)}", secret, template)
with open(path) as stream:
    lines = stream.read().splitlines(True)
header = re.compile(r"^\s*\[\s*%s\s*\]\s*$" % re.escape(section))
setting = re.compile(r"^\s*%s\s*=" % re.escape(key))
start = next((n for n, line in enumerate(lines) if header.match(line)), None)
if start is None:
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines += ["\n[%s]\n" % section, "%s = %s\n" % (key, value)]
else:
    end = next((n for n in range(start + 1, len(lines))
                if lines[n].lstrip().startswith("[")), len(lines))
    found = next((n for n in range(start + 1, end)
                  if setting.match(lines[n])), None)
    if found is None:
        lines.insert(start + 1, "%s = %s\n" % (key, value))
    else:
        lines[found] = "%s = %s\n" % (key, value)
# Rewritten in place: the package set owner, group and mode.
with open(path, "r+") as stream:
    stream.write("".join(lines))
    stream.truncate()
' "$1" "$2" "$3" "$4" "$(secrets_dir)"
}
