#!/usr/bin/env bash
# Installs the providers' published API descriptions that the pull-request tests validate every
# request and answer against (crates/forge/tests, crates/testkit/src/forge.rs), into
# $IMAGE_UPDATE_API_DESCRIPTIONS (default target/api-descriptions):
#
#   github.json            GitHub's REST description (npm @octokit/openapi, api.github.com.json)
#   github-graphql.json    GitHub's GraphQL schema, introspection form (npm @octokit/graphql-schema)
#   octokit-fixtures/      Octokit's recordings of api.github.com (npm @octokit/fixtures)
#   gitea.json             Gitea's swagger.json (crates.io gitea-sdk 0.6.3: Gitea 1.23)
#   forgejo.json           Forgejo's swagger.v1.json (crates.io forgejo-api 0.12.0)
#
# Versions are pinned in tools/api-descriptions (package-lock.json, Cargo.lock). GitLab's is not
# on any registry: crates/testkit/api/README.md says why and what is used instead. Nothing is
# built or run from these packages; only their data files are copied.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/tools/api-descriptions"
out="${IMAGE_UPDATE_API_DESCRIPTIONS:-$root/target/api-descriptions}"
stamp="$(cat "$tools/package-lock.json" "$tools/Cargo.lock" | sha256sum | cut -c1-16)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out/npm"
cp "$tools/package.json" "$tools/package-lock.json" "$out/npm/"
npm ci --prefix "$out/npm" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
modules="$out/npm/node_modules/@octokit"
cp "$modules/openapi/generated/api.github.com.json" "$out/github.json"
cp "$modules/graphql-schema/schema.json" "$out/github-graphql.json"
rm -rf "$out/octokit-fixtures"
cp -r "$modules/fixtures/scenarios/api.github.com" "$out/octokit-fixtures"
rm -rf "$out/npm"

metadata="$(cargo metadata --locked --format-version 1 --manifest-path "$tools/Cargo.toml")"
source_of() {
  printf '%s' "$metadata" | python3 -c '
import json, os, sys
name = sys.argv[1]
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == name:
        print(os.path.dirname(p["manifest_path"]))
' "$1"
}
cp "$(source_of gitea-sdk)/swagger.json" "$out/gitea.json"
cp "$(source_of forgejo-api)/swagger.v1.json" "$out/forgejo.json"
echo "$stamp" > "$out/.stamp"
echo "API descriptions installed in $out"
