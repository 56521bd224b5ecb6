"""Judge a CycloneDX 1.6 JSON SBOM with tools from the package index.

Usage: cyclonedx_read.py SBOM.json SCHEMA_WHEEL

Validates the document against the CycloneDX 1.6 JSON schema as shipped in
SCHEMA_WHEEL (the pinned cyclonedx-python-lib wheel of tests/fixtures.lock),
then reads it back with cyclonedx-python-lib's JSON deserializer and prints
what the library read, as one JSON object. Exits 1 with one line per schema
violation.
"""

import json
import sys
import zipfile

from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

SCHEMA_DIR = "cyclonedx/schema/_res/"
BOM_SCHEMA = "bom-1.6.SNAPSHOT.schema.json"


def schemas(wheel_path):
    with zipfile.ZipFile(wheel_path) as wheel:
        return {
            name[len(SCHEMA_DIR):]: json.loads(wheel.read(name))
            for name in wheel.namelist()
            if name.startswith(SCHEMA_DIR) and name.endswith(".schema.json")
        }


def validate(document, wheel_path):
    found = schemas(wheel_path)
    # The bom schema refers to its siblings by file name, relative to its $id.
    registry = Registry().with_resources(
        (f"http://cyclonedx.org/schema/{name}", Resource(contents=schema, specification=DRAFT7))
        for name, schema in found.items()
    )
    validator = Draft7Validator(
        found[BOM_SCHEMA], registry=registry, format_checker=Draft7Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(document)"
        print(f"schema: {where}: {error.message}", file=sys.stderr)
    return not errors


def read_back(document):
    from cyclonedx.model.bom import Bom

    bom = Bom.from_json(document)  # type: ignore[attr-defined]

    def component(c):
        return {
            "name": c.name,
            "version": c.version,
            "purl": str(c.purl) if c.purl else None,
            "sha256": [h.content for h in c.hashes if h.alg.value == "SHA-256"],
            "ancestors": [str(a.purl) for a in c.pedigree.ancestors] if c.pedigree else [],
            "pedigree_notes": c.pedigree.notes if c.pedigree else None,
            "locations": [o.location for o in c.evidence.occurrences] if c.evidence else [],
            "licences": [
                getattr(l, "value", None) or getattr(l, "id", None) or getattr(l, "name", None)
                for l in c.licenses
            ],
        }

    return {
        "serial_number": str(bom.serial_number),
        "root": component(bom.metadata.component),
        "components": sorted((component(c) for c in bom.components), key=lambda c: c["name"]),
        "dependencies": {
            str(d.ref): sorted(str(inner.ref) for inner in d.dependencies) for d in bom.dependencies
        },
    }


def main():
    sbom_path, wheel_path = sys.argv[1:3]
    with open(sbom_path, encoding="utf-8") as f:
        document = json.load(f)
    if not validate(document, wheel_path):
        sys.exit(1)
    print(json.dumps(read_back(document), indent=1))


if __name__ == "__main__":
    main()
