#!/bin/sh
# Run once by the postgres image on an empty data volume, as the superuser: creates the owner role (it owns
# the database and runs `treasury-bot migrate`) and the worker role (its rights are given by
# `migrate --grant-to treasury_worker`), each with the password of its connection string, so that each
# password is written in one file. Passwords of letters and digits only (`openssl rand -hex 24`): they are
# read from the URL as they are, not percent-decoded.
set -eu

password_of() {
  sed -n 's#^postgres\(ql\)\{0,1\}://[^:/@]*:\([A-Za-z0-9]*\)@.*$#\2#p' "$1" | head -n 1
}
owner_password=$(password_of /run/secrets/database-url-owner)
worker_password=$(password_of /run/secrets/database-url-worker)
if [ -z "$owner_password" ] || [ -z "$worker_password" ]; then
  echo "create-roles.sh: each database URL needs a password of letters and digits" >&2
  exit 1
fi

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v owner_password="$owner_password" -v worker_password="$worker_password" <<'SQL'
CREATE ROLE treasury_owner LOGIN PASSWORD :'owner_password';
CREATE ROLE treasury_worker LOGIN PASSWORD :'worker_password';
ALTER DATABASE treasury OWNER TO treasury_owner;
REVOKE ALL ON DATABASE treasury FROM PUBLIC;
GRANT CONNECT ON DATABASE treasury TO treasury_worker;
SQL
