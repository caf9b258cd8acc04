#!/usr/bin/env python3
"""Build the fuzz targets' seed corpora from the project's own inputs.

    python3 fuzz/seeds.py                       # testdata/ -> fuzz/corpus/<target>/ (committed)
    python3 fuzz/seeds.py --shared /work/shared/corpus --no-testdata --out fuzz/work/shared-seeds

Sources: testdata/ (cases, krm, fetch, templates, demo) and the semver
vectors of src/reflector/selection/semver.rs; with --shared, the *.yaml and
*.yml files of a directory of third-party YAML (used locally only: such
files are not the project's to commit). Every seed is named by the SHA-1 of
its bytes, as libFuzzer names its own, so a seed is written once however
many sources hold it. Per-target caps keep the committed set small.
Existing seeds are kept (crash inputs added by hand stay); --clean removes
the generated ones first.
"""

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Largest seed file per target, and most seeds per target (per run).
MAX_BYTES = 24 * 1024
CAPS = {
    "marker": 400,
    "plan": 400,
    "krm": 150,
    "policies": 150,
    "tags": 60,
    "semver": 120,
    "template": 250,
    "report": 60,
    "argocd": 80,
}

MARKER_EXTRAS = [
    ' {"$imagepolicy": "ns:p"}',
    '{"$imagepolicy":"ns:p:tag"}',
    '#   {  "$imagepolicy" :  "ns:p:name"  }',
    ' {"$imagepolicy": "ns:p", "note": "x"}',
    ' {"$imagepolicy": "ns:p"} # trailing',
    " {'$imagepolicy': 'ns:p'}",
    ' {"$ImagePolicy": "ns:p"}',
    ' {"$imagepolicy": ""}',
    ' {"$imagepolicy": ["ns:p"]}',
    ' {"imagepolicy": "ns:p"}',
    " {imagepolicy: ns:p}",
    ' {"$image_policy": "ns:p"}',
    ' {"$imagepolicy": "ns:p:digest", "$imagepolicy": "ns:q"}',
    ' {"$imagepolicy": "\\u006es:p"}',
    ' see {"$imagepolicy": "ns:p"}',
    " plain comment",
]

TAG_EXTRAS = [
    "# a tags file\n1.4.2\n1.5.0-rc.1      2024-05-01T10:00:00Z\nlatest\t2024-05-02T08:30:00.5+02:00\n",
    "v1.0.0\nv1.1.0\nv2.0.0\nv1.1.0.sig\nmain-abc123-1700000000\nmain-def456-1700000100\n",
    "10\n9\n1.5\n-3\n1e3\n0x1F\n",
    "a-1\nb-2\nc-3-rc1\nx.sig\n3.0.0\n3.1.0-beta.2\n",
    "1.0.0 2024-01-01T00:00:00Z\n1.0.1 2023-12-31T23:59:59.999999999-01:00\n",
]

SEMVER_TAGS = ["1.0.0", "1.2.3", "1.5.0-rc.1", "2.0.0", "0.9.9", "v1.4.2", "1.2.3+build.7", "3.0.0-alpha"]


def seed_name(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


class Writer:
    def __init__(self, out: Path, clean: bool):
        self.out = out
        self.counts = {t: 0 for t in CAPS}
        self.seen = {t: set() for t in CAPS}
        if clean:
            for target in CAPS:
                for f in (out / target).glob("*"):
                    if re.fullmatch(r"[0-9a-f]{40}", f.name):
                        f.unlink()

    def add(self, target: str, data) -> None:
        if isinstance(data, str):
            data = data.encode()
        if not data or len(data) > MAX_BYTES or self.counts[target] >= CAPS[target]:
            return
        name = seed_name(data)
        if name in self.seen[target]:
            return
        self.seen[target].add(name)
        directory = self.out / target
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        if not path.exists():
            path.write_bytes(data)
        self.counts[target] += 1


def yaml_files(root: Path):
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))


COMMENT = re.compile(r"(?:^|[ \t])#(.*)$")


def comments(text: str):
    for line in text.splitlines():
        m = COMMENT.search(line)
        if m:
            yield m.group(1)


def as_items(text: str):
    """A one-document block mapping, as one ResourceList item (or None)."""
    if "\n---" in text or text.startswith(("---", "%", "{", "[")) or "\t" in text:
        return None
    lines = [l for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    if not lines or lines[0].startswith(" "):
        return None
    out = []
    first = True
    for line in text.splitlines():
        out.append(("- " if first else "  ") + line if line else line)
        first = False
    return "\n".join(out) + "\n"


# The placeholders tests/fetch.rs fills in testdata/fetch/ (the registry's
# address, digests), with values of the right shape: the filled-in files are
# definitions the readers accept, the raw ones exercise their errors.
PLACEHOLDERS = {
    "{host}": "registry.example:5000",
    "{recorded}": "sha256:" + "ab" * 32,
    "{multi_digest}": "sha256:" + "cd" * 32,
}


def variants(raw: bytes):
    """The file as it is and, when it holds placeholders, filled in."""
    yield raw
    text = raw.decode()
    filled = text
    for key, value in PLACEHOLDERS.items():
        filled = filled.replace(key, value)
    if filled != text:
        yield filled.encode()


def from_yaml(w: Writer, files, policy_words):
    for path in files:
        try:
            raws = list(variants(path.read_bytes()))
        except (OSError, UnicodeDecodeError):
            continue
        for raw in raws:
            from_one_yaml(w, raw, policy_words)
    for path in files:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        for c in comments(text):
            w.add("marker", c)


def from_one_yaml(w: Writer, raw: bytes, policy_words):
    """The seeds one YAML file gives each target."""
    text = raw.decode()
    interesting = [c for c in comments(text) if "{" in c or "imagepolicy" in c.lower()]
    for c in interesting:
        w.add("marker", c)
    w.add("plan", raw)
    if "ResourceList" in text or re.search(r"^kind: *List\b", text, re.M):
        w.add("krm", raw)
    if any(word in text for word in policy_words):
        w.add("policies", raw)
    if "$imagepolicy" in text and "ResourceList" not in text:
        item = as_items(text)
        if item:
            w.add("krm", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + item)


def semver_vectors(source: Path):
    """String literals of the semver module's tests: ranges and versions."""
    text = source.read_text()
    tests = text[text.find("#[cfg(test)]"):]
    literals = re.findall(r'"((?:[^"\\\n]|\\.)*)"', tests)
    strict = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
    versions, ranges = [], []
    for lit in literals:
        if "\\" in lit or "{" in lit:
            continue
        (versions if strict.match(lit) else ranges).append(lit)
    return list(dict.fromkeys(ranges)), list(dict.fromkeys(versions))


def from_testdata(w: Writer, testdata: Path):
    policy_words = ["image.toolkit.fluxcd.io", "gitops.kubesphere.io", "dockerconfigjson"]
    files = yaml_files(testdata)
    for word in MARKER_EXTRAS:
        w.add("marker", word)
    # Inputs first (cases' in/, the function's stdin), then everything else.
    first = [p for p in files if "/in/" in str(p) or p.name == "stdin.yaml" or "/fetch/" in str(p)]
    from_yaml(w, first + [p for p in files if p not in first], policy_words)

    ranges = set()
    for path in files:
        for m in re.finditer(r"^\s*range:\s*(.+?)\s*$", path.read_text(errors="replace"), re.M):
            value = m.group(1).strip("'\"")
            if "{" not in value:
                ranges.add(value)
    module_ranges, module_versions = semver_vectors(ROOT / "src/reflector/selection/semver.rs")
    ranges = sorted(ranges) + module_ranges
    versions = list(dict.fromkeys(SEMVER_TAGS + module_versions))
    for i, a in enumerate(ranges):
        b = ranges[(i * 7 + 3) % len(ranges)]
        picked = versions[i % len(versions):][:6] + versions[:2]
        w.add("semver", "\n".join([a, b] + picked) + "\n")

    for text in TAG_EXTRAS:
        w.add("tags", text)
    valid_tag = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
    w.add("tags", "\n".join(v for v in versions if valid_tag.match(v)) + "\n")
    for path in files:
        text = path.read_text(errors="replace")
        for block in re.findall(r"tags:\s*\[([^\]]*)\]", text):
            tags = [t.strip().strip("'\"") for t in block.split(",") if t.strip()]
            if tags:
                w.add("tags", "\n".join(tags) + "\n")

    for path in sorted((testdata / "templates/cases").glob("*.tmpl")):
        w.add("template", path.read_bytes())
    for path in files:
        text = path.read_text(errors="replace")
        for m in re.finditer(r"messageTemplate: *\|-?\n((?:[ ]{6,}.*\n|\n)+)", text):
            body = "\n".join(l[8:] for l in m.group(1).splitlines())
            w.add("template", body)

    reports = sorted((testdata / "templates/reports").glob("*.json")) + sorted(
        testdata.glob("cases/*/report.json")
    )
    for path in reports:
        raw = path.read_bytes()
        w.add("report", raw)
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        # The same report as YAML-ish flow text (JSON is YAML).
        w.add("report", json.dumps(value, separators=(",", ":")))


def from_argocd(w: Writer, testdata: Path):
    """Each Argo CD case's tree (testdata/argocd/*/in/, testdata/argocd-cli/*/in/), framed as the
    `argocd` target reads a tree: `#### PATH` before each file."""
    for cases in ("argocd", "argocd-cli"):
        for case in sorted((testdata / cases).glob("*/in")):
            parts = []
            for path in sorted(p for p in case.rglob("*") if p.is_file()):
                try:
                    text = path.read_text()
                except (OSError, UnicodeDecodeError):
                    continue
                parts.append(f"#### {path.relative_to(case).as_posix()}\n{text}")
            if parts:
                w.add("argocd", "".join(parts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--testdata", type=Path, default=ROOT / "testdata")
    parser.add_argument("--no-testdata", action="store_true", help="skip testdata/")
    parser.add_argument("--shared", type=Path, action="append", default=[], help="a directory of YAML files")
    parser.add_argument("--out", type=Path, default=ROOT / "fuzz/corpus")
    parser.add_argument("--clean", action="store_true", help="remove generated seeds first")
    parser.add_argument("--only", action="append", default=[], help="only this target's seeds (repeatable)")
    args = parser.parse_args()
    w = Writer(args.out, args.clean)
    if args.only:
        for target in CAPS:
            if target not in args.only:
                w.counts[target] = CAPS[target]
    if not args.no_testdata:
        from_testdata(w, args.testdata)
        from_argocd(w, args.testdata)
    for shared in args.shared:
        words = ["image.toolkit.fluxcd.io", "gitops.kubesphere.io", "dockerconfigjson"]
        from_yaml(w, yaml_files(shared), words)
    total = sum(w.counts.values())
    print(f"{total} seeds: " + ", ".join(f"{t} {n}" for t, n in w.counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
